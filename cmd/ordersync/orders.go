package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/internal/app"
)

func newOrdersCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "orders", Short: "Read the mirror and track orders created elsewhere"}
	cmd.AddCommand(newOrdersListCommand(), newOrdersShowCommand(), newOrdersEventsCommand(), newOrdersTrackCommand(), newOrdersExportCommand())
	return cmd
}

func newOrdersListCommand() *cobra.Command {
	var since, account string
	var statuses []string
	var asJSON bool
	var limit, offset int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List mirrored orders, newest first",
		Args:  cobra.NoArgs,
	}
	flags := app.AddConfigFlags(cmd.Flags(), app.ScopeMirror)
	cmd.Flags().StringSliceVar(&statuses, "status", nil, "only these statuses: PENDING, PAID, CANCELLED, FINALIZED (comma-separated or repeated)")
	cmd.Flags().StringVar(&since, "since", "", "only orders created since: RFC 3339 time, YYYY-MM-DD, or a duration back from now (24h)")
	cmd.Flags().StringVar(&account, "account", ordersync.DefaultAccount, "merchant account")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many orders (max 1000)")
	cmd.Flags().IntVar(&offset, "offset", 0, "skip this many orders (the next page starts at offset + limit)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the admin API's shape) instead of a table")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if limit < 0 || offset < 0 {
			return fmt.Errorf("--limit and --offset must be whole numbers ≥ 0 (got %d and %d)", limit, offset)
		}
		filter := ordersync.OrderFilter{Account: account, Limit: limit, Offset: offset}
		var err error
		if filter.Statuses, err = admin.ParseStatuses(statuses); err != nil {
			return fmt.Errorf("--status: %w", err)
		}
		if since != "" {
			if filter.Since, err = admin.ParseSince(since, time.Now()); err != nil {
				return fmt.Errorf("--since: %w", err)
			}
		}
		l, err := openMirror(cmd.Context(), flags)
		if err != nil {
			return err
		}
		defer l.Close()
		page, err := l.db.ListOrders(cmd.Context(), filter)
		if err != nil {
			return err
		}
		if asJSON {
			return writeIndented(cmd.OutOrStdout(), admin.NewOrderList(page))
		}
		printOrderTable(cmd.OutOrStdout(), page.Orders)
		fmt.Fprintln(cmd.OutOrStdout(), pageSummary(page))
		return nil
	}
	return cmd
}

func printOrderTable(w io.Writer, orders []*ordersync.MirroredOrder) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CODE\tID\tREFERENCE\tSTATUS\tTOTAL\tCREATED\tLAST SYNCED")
	for _, m := range orders {
		o := m.Order
		status := string(o.OrderStatus)
		if status == "" {
			status = "(not fetched)"
		}
		total := ""
		if status != "(not fetched)" {
			total = strings.TrimSpace(o.Store.CurrencySymbol + o.Total.String() + " " + o.Store.CurrencyCode)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.OrderCode, o.OrderID, dash(o.OrderReference), status, dash(total),
			dash(when(o.Created.Time)), dash(timeString(m.Sync.LastSyncedAt)))
	}
	_ = tw.Flush()
}

// pageSummary says which orders of how many a page shows, and how to ask
// for the next.
func pageSummary(p ordersync.OrderPage) string {
	n := len(p.Orders)
	switch {
	case p.Total == 0:
		return "no orders"
	case n == p.Total:
		return plural(n, "order")
	case n == 0:
		return fmt.Sprintf("no orders from offset %d: %s in all", p.Offset, plural(p.Total, "order"))
	}
	s := fmt.Sprintf("orders %d–%d of %d", p.Offset+1, p.Offset+n, p.Total)
	if n == 1 {
		s = fmt.Sprintf("order %d of %d", p.Offset+1, p.Total)
	}
	if p.Offset+n < p.Total {
		s += fmt.Sprintf(" (next page: --offset %d)", p.Offset+n)
	}
	return s
}

// plural writes a count and its noun, in the singular for one.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func newOrdersShowCommand() *cobra.Command {
	var asJSON bool
	var account string
	cmd := &cobra.Command{
		Use:   "show CODE",
		Short: "Show one mirrored order",
		Args:  cobra.ExactArgs(1),
	}
	flags := app.AddConfigFlags(cmd.Flags(), app.ScopeMirror)
	cmd.Flags().StringVar(&account, "account", ordersync.DefaultAccount, "merchant account")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the order detail JSON with its sync object")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		l, err := openMirror(cmd.Context(), flags)
		if err != nil {
			return err
		}
		defer l.Close()
		m, err := l.db.FindOrderByCode(cmd.Context(), account, args[0])
		if err != nil {
			return fmt.Errorf("order %s: %w", args[0], err)
		}
		if asJSON {
			return writeIndented(cmd.OutOrStdout(), m)
		}
		printOrder(cmd.OutOrStdout(), m)
		return nil
	}
	return cmd
}

func printOrder(w io.Writer, m *ordersync.MirroredOrder) {
	o := m.Order
	cur := o.Store.CurrencySymbol
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, dash(v)) }
	row("Order", o.OrderCode+"  (id "+string(o.OrderID)+")")
	row("Reference", o.OrderReference)
	row("Name", o.Name)
	row("Status", string(o.OrderStatus))
	row("Created", when(o.Created.Time))
	row("Store", strings.TrimSpace(o.Store.Name+" "+o.Store.CurrencyCode))
	row("Subtotal", cur+o.Subtotal.String())
	row("Shipping / discount / surcharge", fmt.Sprintf("%s%s / %s%s / %s%s", cur, o.TotalDetails.ShippingAmount, cur, o.TotalDetails.DiscountAmount, cur, o.TotalDetails.SurchargeAmount))
	row("Total", cur+o.Total.String())
	row("Link", o.PaymentLinkURL)
	if o.Payment != nil {
		row("Authorization", o.Payment.AuthorizationCode)
		row("Voucher", o.Payment.VoucherURL)
	}
	// The service gives no payment time: this is when ordersync learned it.
	row("Paid (learned)", timeString(m.Sync.PaidAt))
	row("Status changed", timeString(m.Sync.StatusChangedAt))
	row("First seen", when(m.Sync.FirstSeenAt))
	row("Last synced", timeString(m.Sync.LastSyncedAt))
	row("Last event", strings.TrimSpace(string(m.Sync.LastEventType)+" "+timeString(m.Sync.LastEventAt)))
	row("Fetches", fmt.Sprint(m.Sync.FetchCount))
	_ = tw.Flush()
	if len(o.LineItems) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "QTY\tITEM\tSKU\tPRICE\tSUBTOTAL")
		for _, it := range o.LineItems {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s%s\t%s%s\n", it.Quantity, it.Name, dash(it.SKU), cur, it.Price, cur, it.SubTotal)
		}
		_ = tw.Flush()
	}
}

func newOrdersEventsCommand() *cobra.Command {
	var code, id, account string
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "events",
		Short: "List the webhooks heard about an order, in the mirror or not, and its deliveries, newest first",
		Long: `events lists the event log: every webhook received, with its signature
verdict and what became of it. With --order-code or --order-id it answers
"did we hear about this order?", also for orders the mirror does not hold
(an event dead-lettered as unresolved, another product's order). With
--order-code it also shows how each of the order's events reached each HTTP
endpoint: delivered, dead-lettered or waiting for an endpoint that answered
410 Gone, with the webhook-id, the attempts and the last HTTP status.`,
		Args: cobra.NoArgs,
	}
	flags := app.AddConfigFlags(cmd.Flags(), app.ScopeMirror)
	cmd.Flags().StringVar(&code, "order-code", "", "only events about this order code")
	cmd.Flags().StringVar(&id, "order-id", "", "only events about this order id")
	cmd.Flags().StringVar(&account, "account", ordersync.DefaultAccount, "merchant account")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many events (max 1000)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the admin API's shape) instead of a table")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		l, err := openMirror(cmd.Context(), flags)
		if err != nil {
			return err
		}
		defer l.Close()
		code = strings.TrimSpace(code)
		events, err := l.db.ListEvents(cmd.Context(), ordersync.EventFilter{Account: account, OrderCode: code,
			OrderID: ordersync.ID(strings.TrimSpace(id)), Limit: limit})
		if err != nil {
			return err
		}
		var deliveries []ordersync.DeliveryRecord
		if code != "" {
			if deliveries, err = l.db.ListDeliveries(cmd.Context(), ordersync.DeliveryFilter{Account: account, OrderCode: code, Limit: limit}); err != nil {
				return err
			}
		}
		log := admin.NewEventList(events, deliveries, limit)
		if asJSON {
			return writeIndented(cmd.OutOrStdout(), log)
		}
		printEventTable(cmd.OutOrStdout(), log.Events)
		return nil
	}
	return cmd
}

func printEventTable(w io.Writer, events []admin.EventJSON) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tTYPE\tCODE\tID\tREFERENCE\tSIGNATURE\tOUTCOME\tDETAIL")
	for _, e := range events {
		detail := e.Detail
		if e.Kind == admin.EventKindDelivery {
			detail = deliveryDetail(e)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", when(e.At), dash(e.Type), dash(e.OrderCode),
			dash(string(e.OrderID)), dash(e.OrderReference), dash(e.Signature), dash(e.Outcome), dash(detail))
	}
	_ = tw.Flush()
	fmt.Fprintln(w, plural(len(events), "event"))
}

// deliveryDetail says in a line where a delivery went and how it ended:
// "PAID to ep_…, HTTP 204, 1 attempt, msg_…".
func deliveryDetail(e admin.EventJSON) string {
	to := "to " + e.EndpointID
	if e.OrderStatus != "" {
		to = string(e.OrderStatus) + " " + to
	}
	answer := "no answer"
	if e.Status > 0 {
		answer = fmt.Sprintf("HTTP %d", e.Status)
	}
	parts := []string{to, answer, plural(e.Attempts, "attempt"), e.WebhookID}
	if e.Detail != "" {
		parts = append(parts, e.Detail)
	}
	return strings.Join(parts, ", ")
}

func newOrdersTrackCommand() *cobra.Command {
	var account string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "track CODE...",
		Short: "Fetch orders created elsewhere now and follow their webhooks from then on",
		Args:  cobra.MinimumNArgs(1),
	}
	flags := app.AddConfigFlags(cmd.Flags(), app.ScopeMirror|app.ScopeUpstream)
	cmd.Flags().StringVar(&account, "account", ordersync.DefaultAccount, "merchant account")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the tracked orders as JSON (the admin API's shape)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		l, err := openUpstream(cmd.Context(), flags, account)
		if err != nil {
			return err
		}
		defer l.Close()
		failed := 0
		tracked := []*ordersync.MirroredOrder{}
		for _, code := range args {
			m, err := l.follower.TrackOrder(cmd.Context(), account, code)
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", code, inUserTerms(err))
				failed++
				continue
			}
			tracked = append(tracked, m)
		}
		if asJSON {
			if err := writeIndented(cmd.OutOrStdout(), admin.NewOrderList(ordersync.OrderPage{Orders: tracked, Total: len(tracked), Limit: len(tracked)})); err != nil {
				return err
			}
		} else if len(tracked) > 0 {
			printOrderTable(cmd.OutOrStdout(), tracked)
			fmt.Fprintln(cmd.OutOrStdout(), plural(len(tracked), "order")+" tracked")
		}
		if failed > 0 {
			return fmt.Errorf("%d of %d orders could not be tracked", failed, len(args))
		}
		return nil
	}
	return cmd
}

func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// when writes a time as every table does: RFC 3339 in UTC, to the second;
// nothing for the zero time.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func timeString(t *time.Time) string {
	if t == nil {
		return ""
	}
	return when(*t)
}
