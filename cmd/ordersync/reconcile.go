package main

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/worker"
)

func newReconcileCommand() *cobra.Command {
	var all bool
	var since, account string
	var limit int
	cmd := &cobra.Command{
		Use:   "reconcile [--all] [--since T]",
		Short: "Check orders that can still change now, whether due or not, and print what changed",
		Args:  cobra.NoArgs,
	}
	flags := addConfigFlags(cmd.Flags(), scopeMirror|scopeUpstream)
	cmd.Flags().BoolVar(&all, "all", false, "every order, not only those that can still change (PENDING, PAID)")
	cmd.Flags().StringVar(&since, "since", "", "only orders created since: RFC 3339 time, YYYY-MM-DD or a duration (24h)")
	cmd.Flags().StringVar(&account, "account", ordersync.DefaultAccount, "merchant account")
	cmd.Flags().IntVar(&limit, "limit", 10000, "at most this many orders")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		filter := ordersync.ReconcileFilter{Account: account, All: all, Limit: limit}
		if since != "" {
			t, err := admin.ParseSince(since, time.Now())
			if err != nil {
				return fmt.Errorf("--since: %w", err)
			}
			filter.Since = t
		}
		l, err := openUpstream(cmd.Context(), flags, account)
		if err != nil {
			return err
		}
		defer l.Close()
		rec, err := worker.NewReconciler(worker.ReconcilerConfig{Source: l.db, Syncer: l.syncer, Account: account, Registerer: prometheus.NewRegistry()})
		if err != nil {
			return err
		}
		rep, err := rec.RunOnce(cmd.Context(), filter)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		for _, c := range rep.Changed {
			fmt.Fprintf(out, "%s\t%s → %s\n", c.OrderCode, c.From, c.To)
		}
		fmt.Fprintf(out, "reconciled %d orders: %d changed, %d unchanged, %d failed\n", rep.Candidates, len(rep.Changed), rep.Unchanged, rep.Failed)
		if rep.Failed > 0 {
			return fmt.Errorf("%d orders could not be fetched; first error: %w", rep.Failed, rep.FirstError)
		}
		return nil
	}
	return cmd
}

func newMigrateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the mirror's schema (serve also does this at start)",
		Args:  cobra.NoArgs,
	}
	flags := addConfigFlags(cmd.Flags(), scopeMirror)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		l, err := openMirror(cmd.Context(), flags)
		if err != nil {
			return err
		}
		defer l.Close()
		fmt.Fprintf(cmd.OutOrStdout(), "schema of %s is up to date\n", redactURL(l.cfg.DatabaseURL))
		return nil
	}
	return cmd
}
