package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/build"
)

// The groups of `ordersync --help`, in the order an operator meets them.
const (
	groupOperate = "operate"
	groupData    = "data"
	groupTry     = "try"
)

func newRootCommand() *cobra.Command {
	// Commands are listed in the order they are added: serve first.
	cobra.EnableCommandSorting = false
	root := &cobra.Command{
		Use:           "ordersync",
		Short:         "Mirror payment-link orders into SQL and fire fulfilment exactly once",
		Version:       build.Read().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddGroup(
		&cobra.Group{ID: groupOperate, Title: "Run the service:"},
		&cobra.Group{ID: groupData, Title: "Orders, payment links, dead letters, fulfilment endpoints and the audit trail:"},
		&cobra.Group{ID: groupTry, Title: "Try it without an account:"},
	)
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add(groupOperate, newServeCommand(), newCheckCommand(), newMigrateCommand(), newReconcileCommand(), newReindexCommand())
	add(groupData, newOrdersCommand(), newReportCommand(), newLinksCommand(), newDLQCommand(), newEndpointsCommand(), newAuditCommand())
	add(groupTry, newDemoCommand(), newSimCommand())
	root.AddCommand(newVersionCommand())
	return root
}

// execute runs a command line and states its failure in the user's terms.
func execute(ctx context.Context, root *cobra.Command) error {
	return inUserTerms(root.ExecuteContext(ctx))
}

// inUserTerms names the setting to fix where an error has one, instead of
// the upstream's own text (which may be in Spanish and names no setting).
func inUserTerms(err error) error {
	var ue *ordersync.UpstreamError
	if errors.As(err, &ue) && ue.Kind == ordersync.UpstreamUnauthorized {
		return &explained{err: err, msg: fmt.Sprintf("%s: the payment link service refused the secret key (HTTP %d): check %s, or %s for another account",
			ue.Op, ue.StatusCode, app.AccountSettings(ordersync.DefaultAccount).SecretKey, app.AccountSettings("NAME").SecretKey)}
	}
	return err
}

// explained is an error restated for the user; the original stays
// reachable with errors.Is and errors.As.
type explained struct {
	err error
	msg string
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.err }
