package main

import (
	"github.com/spf13/cobra"
)

// The groups of `ordersync --help`, in the order an operator meets them.
const (
	groupOperate = "operate"
	groupData    = "data"
	groupTry     = "try"
	groupLab     = "lab"
)

func newRootCommand() *cobra.Command {
	// Commands are listed in the order they are added: serve first.
	cobra.EnableCommandSorting = false
	root := &cobra.Command{
		Use:           "ordersync",
		Short:         "Mirror payment-link orders into SQL and fire fulfilment exactly once",
		Version:       buildVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddGroup(
		&cobra.Group{ID: groupOperate, Title: "Run the service:"},
		&cobra.Group{ID: groupData, Title: "Orders, payment links and dead letters:"},
		&cobra.Group{ID: groupTry, Title: "Try it without an account:"},
		&cobra.Group{ID: groupLab, Title: "Test the pipeline under faults and load (the lab):"},
	)
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add(groupOperate, newServeCommand(), newMigrateCommand(), newReconcileCommand())
	add(groupData, newOrdersCommand(), newLinksCommand(), newDLQCommand())
	add(groupTry, newDemoCommand(), newSimCommand())
	add(groupLab, newChaosCommand(), newLoadtestCommand(), newMultiprocCommand())
	root.AddCommand(newVersionCommand())
	return root
}
