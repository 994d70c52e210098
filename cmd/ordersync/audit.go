package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"text/tabwriter"

	"github.com/ordersync/ordersync/admin/api"
	"github.com/spf13/cobra"
)

func newAuditCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "Read the audit trail: who did what, on which object, how it ended"}
	cmd.AddCommand(newAuditListCommand())
	return cmd
}

func newAuditListCommand() *cobra.Command {
	var actor, action, since, until, cursor string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--actor NAME] [--action ACTION] [--since T] [--until T]",
		Short: "List the audit trail, newest first (asks the running service; a viewer's token is enough)",
		Args:  cobra.NoArgs,
	}
	af := addAdminFlags(cmd)
	cmd.Flags().StringVar(&actor, "actor", "", "only this actor: a token's name, an operating-system user, loopback")
	cmd.Flags().StringVar(&action, "action", "", "only this action, e.g. dead-letter.replay, endpoint.rotate-secret")
	cmd.Flags().StringVar(&since, "since", "", "only from: RFC 3339 time, YYYY-MM-DD or a duration back (24h)")
	cmd.Flags().StringVar(&until, "until", "", "only before: RFC 3339 time, YYYY-MM-DD or a duration back")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many records (1000 at most)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "the page after this one (the nextCursor a page printed)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		q := url.Values{"limit": {strconv.Itoa(limit)}}
		for k, v := range map[string]string{"actor": actor, "action": action, "since": since, "until": until, "cursor": cursor} {
			if v != "" {
				q.Set(k, v)
			}
		}
		var page api.AuditList
		if err := af.call(cmd.Context(), http.MethodGet, "/v1/audit?"+q.Encode(), nil, &page); err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if asJSON {
			return writeIndented(out, page)
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "AT\tACTOR\tROLE\tVIA\tACTION\tOBJECT\tOUTCOME")
		for _, r := range page.Records {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", when(r.At), r.Actor, dash(r.Role), r.Via, r.Action, dash(r.Object), r.Outcome)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(out, plural(page.Count, "record"))
		if page.NextCursor != "" {
			fmt.Fprintf(out, "more: --cursor %s\n", page.NextCursor)
		}
		return nil
	}
	return cmd
}
