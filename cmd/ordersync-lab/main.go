// Command ordersync-lab tests the ordersync pipeline under faults and load:
// chaos (kill -9 under upstream faults), diskfull (the disk filled under
// load, then freed), loadtest (ingest and end to end), mix (whole order
// lives over a prefilled mirror), multiproc (a scale-out deployment on
// PostgreSQL and an external NATS), idle (what serve costs with open orders
// and no traffic), restart (SIGTERM under load behind a readiness probe),
// reload (SIGHUP under load), pages (the back office's page times on a
// large mirror) and soak (hours at a steady mix with periodic kill -9, its
// resources sampled). It
// starts the real ordersync binary as its child, so what it
// measures is what operators run, and nothing of the lab (its load
// generator and fault proxy) is linked into that binary.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
)

// defaultOrdersStream is the stream of order events ordersync serve keeps
// by default (queue.Config), which the lab's runs do not change.
const defaultOrdersStream = "ORDERSYNC_ORDERS"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand().ExecuteContext(ctx)
	stop()
	removeBuilt()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ordersync-lab:", err)
		os.Exit(1)
	}
}

// binaryPath is --ordersync: the binary the lab runs.
var binaryPath string

func newRootCommand() *cobra.Command {
	cobra.EnableCommandSorting = false
	root := &cobra.Command{
		Use:           "ordersync-lab",
		Short:         "Test the ordersync pipeline under faults and load",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&binaryPath, "ordersync", "",
		"the ordersync binary to run (default: ordersync beside this binary, else built from this module with go build)")
	root.AddCommand(newChaosCommand(), newDiskfullCommand(), newLoadtestCommand(), newMixCommand(), newMultiprocCommand(), newIdleCommand(), newSoakCommand(), newRestartCommand(), newReloadCommand(), newPagesCommand())
	return root
}

// withBinary is the RunE of a lab command: it finds the ordersync binary
// to run, then runs.
func withBinary(run func(cmd *cobra.Command, exe string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		exe, err := ordersyncBinary(cmd.Context(), cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		return run(cmd, exe)
	}
}

// verdict turns a run's report into the command's exit: an error when the
// run could not finish or a guarantee failed.
func verdict(name string, rep interface{ OK() bool }, err error) error {
	switch {
	case err != nil:
		return err
	case !rep.OK():
		return fmt.Errorf("%s test failed", name)
	}
	return nil
}

// built is the temporary directory of an ordersync the lab built.
var built string

// ordersyncBinary finds the binary to run: --ordersync, else an ordersync
// beside the lab's own binary (both installed with go install), else one
// built now from the module in the working directory, as `go run
// ./cmd/ordersync-lab` from a clone needs.
func ordersyncBinary(ctx context.Context, log io.Writer) (string, error) {
	if binaryPath != "" {
		if _, err := os.Stat(binaryPath); err != nil {
			return "", fmt.Errorf("--ordersync: %w", err)
		}
		return binaryPath, nil
	}
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), "ordersync")
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() {
			return beside, nil
		}
	}
	if built == "" {
		dir, err := os.MkdirTemp("", "ordersync-lab-")
		if err != nil {
			return "", err
		}
		built = dir
	}
	return buildOrdersync(ctx, log, filepath.Join(built, "ordersync"))
}

// buildOrdersync builds cmd/ordersync of this module into out.
func buildOrdersync(ctx context.Context, log io.Writer, out string) (string, error) {
	fmt.Fprintln(log, "building ordersync (go build ./cmd/ordersync); pass --ordersync to use a binary you built")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/ordersync/ordersync/cmd/ordersync")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) || errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("build ordersync: %w (run the lab from a clone of ordersync with Go installed, or pass --ordersync)", err)
		}
		return "", fmt.Errorf("build ordersync: %w", err)
	}
	return out, nil
}

func removeBuilt() {
	if built != "" {
		os.RemoveAll(built)
	}
}
