package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/redact"
)

func newReconcileCommand() *cobra.Command {
	var all, asJSON bool
	var since, account string
	var limit int
	cmd := &cobra.Command{
		Use:   "reconcile [--all] [--since T]",
		Short: "Check orders that can still change now, whether due or not, and print what changed",
		Args:  cobra.NoArgs,
	}
	flags := app.AddConfigFlags(cmd.Flags(), app.ScopeMirror|app.ScopeUpstream)
	cmd.Flags().BoolVar(&all, "all", false, "every order, not only those that can still change (PENDING, PAID)")
	cmd.Flags().StringVar(&since, "since", "", "only orders created since: RFC 3339 time, YYYY-MM-DD or a duration (24h)")
	cmd.Flags().StringVar(&account, "account", ordersync.DefaultAccount, "merchant account")
	cmd.Flags().IntVar(&limit, "limit", 10000, "at most this many orders")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON (no progress is shown)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		filter := ordersync.ReconcileFilter{Account: account, All: all, Limit: limit}
		if since != "" {
			t, err := ordersync.ParseSince(since, time.Now())
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
		bar := newProgress(cmd.ErrOrStderr(), !asJSON && isTerminal(cmd.ErrOrStderr()))
		rep, err := l.Reconcile(cmd.Context(), filter, func(r app.ReconcileReport) {
			bar.show(fmt.Sprintf("reconciling: %d of %d checked, %d changed, %d failed", r.Fetched+r.Failed, r.Candidates, len(r.Changed), r.Failed))
		})
		bar.done()
		outcome := err
		if err == nil && rep.Failed > 0 {
			outcome = fmt.Errorf("%d of %d orders could not be fetched", rep.Failed, rep.Candidates)
		}
		l.audit(cmd.Context(), "reconcile", fmt.Sprintf("%s: %d orders checked, %d changed", account, rep.Candidates, len(rep.Changed)), outcome)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if asJSON {
			if err := writeIndented(out, reconcileJSONOf(rep)); err != nil {
				return err
			}
		} else {
			for _, c := range rep.Changed {
				fmt.Fprintf(out, "%s\t%s → %s\n", c.OrderCode, c.From, c.To)
			}
			fmt.Fprintf(out, "reconciled %s: %d changed, %d unchanged, %d failed\n", plural(rep.Candidates, "order"), len(rep.Changed), rep.Unchanged, rep.Failed)
		}
		if rep.Failed > 0 {
			return fmt.Errorf("%d orders could not be fetched; first error: %w", rep.Failed, rep.FirstError)
		}
		return nil
	}
	return cmd
}

// reconcileJSON is the report of `reconcile --json`.
type reconcileJSON struct {
	Checked    int                 `json:"checked"`
	Unchanged  int                 `json:"unchanged"`
	Changed    []reconcileChangeJS `json:"changed"`
	Failed     int                 `json:"failed"`
	FirstError string              `json:"firstError,omitempty"`
}

type reconcileChangeJS struct {
	OrderCode string           `json:"orderCode"`
	From      ordersync.Status `json:"from"`
	To        ordersync.Status `json:"to"`
}

func reconcileJSONOf(rep app.ReconcileReport) reconcileJSON {
	out := reconcileJSON{Checked: rep.Candidates, Unchanged: rep.Unchanged, Failed: rep.Failed, Changed: []reconcileChangeJS{}}
	for _, c := range rep.Changed {
		out.Changed = append(out.Changed, reconcileChangeJS{OrderCode: c.OrderCode, From: c.From, To: c.To})
	}
	if rep.FirstError != nil {
		out.FirstError = rep.FirstError.Error()
	}
	return out
}

func newMigrateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the mirror's schema (serve also does this at start)",
		Args:  cobra.NoArgs,
	}
	flags := app.AddConfigFlags(cmd.Flags(), app.ScopeMirror)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		l, err := openMirror(cmd.Context(), flags)
		if err != nil {
			return err
		}
		defer l.Close()
		l.audit(cmd.Context(), "schema.migrate", redact.URL(l.Config().DatabaseURL), nil)
		fmt.Fprintf(cmd.OutOrStdout(), "schema of %s is up to date\n", redact.URL(l.Config().DatabaseURL))
		return nil
	}
	return cmd
}
