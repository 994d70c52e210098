package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newSimCommand is replaced by the simulator's command.
func newSimCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "sim",
		Short: "Run a simulator of the payment link service",
		RunE:  func(*cobra.Command, []string) error { return errors.New("not built yet") },
	}
}
