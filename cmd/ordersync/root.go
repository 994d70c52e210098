package main

import (
	"github.com/spf13/cobra"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "ordersync",
		Short:         "Mirror payment-link orders into SQL and fire fulfilment exactly once",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServeCommand(), newDemoCommand(), newSimCommand(), newLinksCommand(),
		newOrdersCommand(), newDLQCommand(), newReconcileCommand(), newMigrateCommand(), newEndpointsCommand())
	root.AddCommand(newChaosCommand(), newLoadtestCommand())
	root.AddCommand(newMultiprocCommand())
	return root
}
