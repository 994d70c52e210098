package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/internal/app"
)

func newDLQCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "Inspect and replay dead letters: events that ended in a permanent failure",
	}
	cmd.AddCommand(newDLQListCommand(), newDLQShowCommand(), newDLQReplayCommand())
	return cmd
}

func newDLQListCommand() *cobra.Command {
	var reason string
	var all, asJSON bool
	cmd := &cobra.Command{Use: "list", Short: "List dead letters not yet replayed", Args: cobra.NoArgs}
	flags := app.AddConfigFlags(cmd.Flags(), app.ScopeMirror)
	cmd.Flags().StringVar(&reason, "reason", "", "only this reason: unknown_order, unresolved, malformed, retries_exhausted, rejected")
	cmd.Flags().BoolVar(&all, "all", false, "include letters already replayed")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		f := ordersync.DeadLetterFilter{IncludeReplayed: all}
		if reason != "" {
			var err error
			if f.Reason, err = ordersync.ParseDeadLetterReason(reason); err != nil {
				return fmt.Errorf("--reason: %w", err)
			}
		}
		l, err := openMirror(cmd.Context(), flags)
		if err != nil {
			return err
		}
		defer l.Close()
		dls, err := l.DB().ListDeadLetters(cmd.Context(), f)
		if err != nil {
			return err
		}
		if asJSON {
			out := make([]api.DeadLetterJSON, 0, len(dls))
			for _, dl := range dls {
				out = append(out, api.DeadLetterJSONOf(dl))
			}
			return writeIndented(cmd.OutOrStdout(), map[string]any{"deadLetters": out, "count": len(out)})
		}
		tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tCREATED\tREASON\tATTEMPTS\tORDER ID\tREFERENCE\tCODE\tREPLAYED\tLAST ERROR")
		for _, dl := range dls {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\n", dl.ID, when(dl.CreatedAt), dl.Reason, dl.Attempts,
				dash(string(dl.OrderID)), dash(dl.OrderReference), dash(dl.OrderCode), dl.ReplayCount, ordersync.Clip(dl.LastError, 79))
		}
		_ = tw.Flush()
		fmt.Fprintln(cmd.OutOrStdout(), plural(len(dls), "dead letter"))
		return nil
	}
	return cmd
}

func newDLQShowCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{Use: "show ID", Short: "Show one dead letter with its original event", Args: cobra.ExactArgs(1)}
	flags := app.AddConfigFlags(cmd.Flags(), app.ScopeMirror)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the admin API's shape) instead of a table")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		id, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil {
			return fmt.Errorf("dead letter id %q is not a number", args[0])
		}
		l, err := openMirror(cmd.Context(), flags)
		if err != nil {
			return err
		}
		defer l.Close()
		dl, err := l.DB().FindDeadLetter(cmd.Context(), id)
		if err != nil {
			return fmt.Errorf("dead letter %d: %w", id, err)
		}
		if asJSON {
			return writeIndented(cmd.OutOrStdout(), api.DeadLetterJSONOf(dl))
		}
		printDeadLetter(cmd.OutOrStdout(), dl)
		return nil
	}
	return cmd
}

func printDeadLetter(w io.Writer, dl *ordersync.DeadLetter) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, dash(v)) }
	row("Dead letter", strconv.FormatInt(dl.ID, 10))
	row("Account", dl.Account)
	row("Reason", string(dl.Reason))
	row("Created", when(dl.CreatedAt))
	row("Attempts", strconv.Itoa(dl.Attempts))
	row("Last error", dl.LastError)
	row("Order code", dl.OrderCode)
	row("Order id", string(dl.OrderID))
	row("Order reference", dl.OrderReference)
	row("Event", dl.MsgID)
	row("Replayed", fmt.Sprintf("%d times, last %s", dl.ReplayCount, dash(timeString(dl.ReplayedAt))))
	_ = tw.Flush()
	if utf8.Valid(dl.Body) {
		fmt.Fprintf(w, "\nThe event as received:\n%s\n", dl.Body)
	} else {
		fmt.Fprintf(w, "\nThe event as received: %d bytes, not text (--json shows them in base64)\n", len(dl.Body))
	}
}

func newDLQReplayCommand() *cobra.Command {
	var all bool
	var reason string
	cmd := &cobra.Command{
		Use:   "replay ID | --all [--reason R]",
		Short: "Send dead letters through the pipeline again (asks the running service)",
		Long: `replay asks the running ordersync (its admin API) to put the events back
on the queue, where workers resolve, fetch and mirror them as if they had
just arrived. The service must be running. It finds the admin API and its
token in the same config file and environment as serve.`,
		Args: cobra.MaximumNArgs(1),
	}
	af := addAdminFlags(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "replay every letter not yet replayed")
	cmd.Flags().StringVar(&reason, "reason", "", "with --all: only this reason")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var path string
		switch {
		case all && len(args) == 0:
			q := url.Values{}
			if reason != "" {
				r, err := ordersync.ParseDeadLetterReason(reason)
				if err != nil {
					return fmt.Errorf("--reason: %w", err)
				}
				q.Set("reason", string(r))
			}
			path = "/v1/dead-letters/replay?" + q.Encode()
		case !all && len(args) == 1:
			if _, err := strconv.ParseInt(args[0], 10, 64); err != nil {
				return fmt.Errorf("dead letter id %q is not a number", args[0])
			}
			path = "/v1/dead-letters/" + args[0] + "/replay"
		default:
			return fmt.Errorf("give either one dead letter ID or --all")
		}
		var out struct{ Replayed int }
		if err := af.call(cmd.Context(), http.MethodPost, path, nil, &out); err != nil {
			var ae *admin.Error
			if errors.As(err, &ae) && ae.Problem.Title != "" {
				return fmt.Errorf("replay: %s", ae.Problem.Title)
			}
			return err
		}
		fmt.Fprintln(cmd.OutOrStdout(), plural(out.Replayed, "dead letter")+" replayed")
		return nil
	}
	return cmd
}

// adminBaseURL is where a client on the same host reaches the admin API
// that listens on addr: a wildcard address is reached on loopback.
func adminBaseURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
