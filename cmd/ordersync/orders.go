package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/internal/app"
)

func newOrdersCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "orders", Short: "Read the mirror and track orders created elsewhere"}
	cmd.AddCommand(newOrdersListCommand(), newOrdersShowCommand(), newOrdersEventsCommand(), newOrdersTrackCommand(), newOrdersExportCommand())
	return cmd
}

func newOrdersListCommand() *cobra.Command {
	var asJSON, count bool
	var limit, offset int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List and find mirrored orders, newest first by default",
		Args:  cobra.NoArgs,
	}
	flags := app.AddConfigFlags(cmd.Flags(), app.ScopeMirror)
	ff := addOrderFilterFlags(cmd.Flags())
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many orders (max 1000)")
	cmd.Flags().IntVar(&offset, "offset", 0, "skip this many orders (prefer --cursor: pages by offset shift as orders arrive)")
	cmd.Flags().BoolVar(&count, "count", false, "also count every order the filter selects (a pass over all of them)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the admin API's shape) instead of a table")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		filter, err := ff.filter(func(q *ordersync.OrderQuery) {
			q.Limit, q.Offset = strconv.Itoa(limit), strconv.Itoa(offset)
			if count {
				q.Count = "exact"
			}
		}, map[string]string{"limit": "limit", "offset": "offset"})
		if err != nil {
			return err
		}
		l, err := openMirror(cmd.Context(), flags)
		if err != nil {
			return err
		}
		defer l.Close()
		if _, err := ff.store(l, &filter); err != nil {
			return err
		}
		page, err := l.DB().ListOrders(cmd.Context(), filter)
		if err != nil {
			return err
		}
		if asJSON {
			return writeIndented(cmd.OutOrStdout(), api.NewOrderList(page))
		}
		printOrderTable(cmd.OutOrStdout(), page.Orders)
		fmt.Fprintln(cmd.OutOrStdout(), pageSummary(page, filter.After != nil))
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

// pageSummary says which orders a page shows, of how many when that is
// known (counted, or the last page of a listing begun without a cursor),
// and how to ask for the next: by offset when the listing pages by offset,
// else by cursor.
func pageSummary(p ordersync.OrderPage, byCursor bool) string {
	n := len(p.Orders)
	total := p.Total
	if total == nil && p.Next == nil && !byCursor && (n > 0 || p.Offset == 0) {
		t := p.Offset + n
		total = &t
	}
	var s string
	switch {
	case byCursor && total == nil:
		s = plural(n, "order") + " after the cursor"
	case n == 0 && total != nil && *total == 0:
		return "no orders"
	case n == 0:
		s = fmt.Sprintf("no orders from offset %d", p.Offset)
	case total != nil && n == *total:
		return plural(n, "order")
	case n == 1:
		s = fmt.Sprintf("order %d", p.Offset+1)
	default:
		s = fmt.Sprintf("orders %d–%d", p.Offset+1, p.Offset+n)
	}
	if total != nil {
		if n == 0 {
			s += fmt.Sprintf(": %s in all", plural(*total, "order"))
		} else {
			s += fmt.Sprintf(" of %d", *total)
		}
	}
	switch {
	case p.Next == nil:
	case p.Offset > 0 && !byCursor:
		s += fmt.Sprintf(" (next page: --offset %d)", p.Offset+n)
	default:
		s += " (next page: --cursor " + p.Next.String() + ")"
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
		m, err := l.DB().FindOrderByCode(cmd.Context(), account, args[0])
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
		events, err := l.DB().ListEvents(cmd.Context(), ordersync.EventFilter{Account: account, OrderCode: code,
			OrderID: ordersync.ID(strings.TrimSpace(id)), Limit: limit})
		if err != nil {
			return err
		}
		var deliveries []ordersync.DeliveryRecord
		if code != "" {
			if deliveries, err = l.DB().ListDeliveries(cmd.Context(), ordersync.DeliveryFilter{Account: account, OrderCode: code, Limit: limit}); err != nil {
				return err
			}
		}
		log := api.NewEventList(events, deliveries, limit)
		if asJSON {
			return writeIndented(cmd.OutOrStdout(), log)
		}
		printEventTable(cmd.OutOrStdout(), log.Events)
		return nil
	}
	return cmd
}

func printEventTable(w io.Writer, events []api.EventJSON) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tTYPE\tCODE\tID\tREFERENCE\tSIGNATURE\tOUTCOME\tDETAIL")
	for _, e := range events {
		detail := e.Detail
		if e.Kind == api.EventKindDelivery {
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
func deliveryDetail(e api.EventJSON) string {
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
			m, err := l.Follower().TrackOrder(cmd.Context(), account, code)
			l.audit(cmd.Context(), "order.track", "order "+code, err)
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", code, inUserTerms(err))
				failed++
				continue
			}
			tracked = append(tracked, m)
		}
		if asJSON {
			n := len(tracked)
			if err := writeIndented(cmd.OutOrStdout(), api.NewOrderList(ordersync.OrderPage{Orders: tracked, Total: &n, Limit: n})); err != nil {
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
