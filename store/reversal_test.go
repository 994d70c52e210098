package store

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// withPayment gives a document a payment, as the service reports one.
func withPayment(doc map[string]any) {
	doc["payment"] = map[string]any{"authorizationCode": "771203", "voucherUrl": "",
		"buyer": map[string]any{"name": "Ana Ruiz", "phone": "+50370005555", "email": "ana@example.com"}}
}

// withBuyerOnly gives a document a payment that names its buyer alone.
func withBuyerOnly(doc map[string]any) {
	doc["payment"] = map[string]any{"buyer": map[string]any{"name": "", "phone": "", "email": "ana@example.com"}}
}

// TestReversalFromEvidence: an order that ends CANCELLED after evidence of
// a payment (an authorization code or a buyer in a document, a payment
// webhook) is reversed though no fetch saw it PAID: paid at the first
// evidence, counted paid and reversed by the daily totals (their sums and
// the orders one by one alike), selected by the reversed range, and no
// PAID trigger fires. A cancellation without evidence stays cancelled.
func TestReversalFromEvidence(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		base := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
		seq := int64(0)
		step := func(code string, st ordersync.Status, at time.Time, edit func(map[string]any), events ...ordersync.EventRecord) {
			t.Helper()
			seq++
			edits := []func(map[string]any){func(doc map[string]any) { doc["created"] = base.Format("2006-01-02T15:04:05.000Z") }}
			if edit != nil {
				edits = append(edits, edit)
			}
			p := fetched(orderDoc(t, code, int(seq)+500, st, edits...), seq, events...)
			p.FetchedAt = at
			apply(t, db, p)
		}
		h := func(n int) time.Time { return base.Add(time.Duration(n) * time.Hour) }
		// The cancelled document carries the payment.
		step("auth", ordersync.StatusPending, h(1), nil)
		step("auth", ordersync.StatusCancelled, h(3), withPayment)
		// A payment webhook came with a fetch that still saw PENDING.
		step("hook", ordersync.StatusPending, h(2), nil, webhook("hook", ordersync.EventSuccessPayment, h(1)))
		step("hook", ordersync.StatusCancelled, h(26), nil)
		// The pending document named the buyer; the cancelled one nothing.
		step("prev", ordersync.StatusPending, h(1), withBuyerOnly)
		step("prev", ordersync.StatusCancelled, h(4), nil)
		// First seen cancelled, with the payment.
		step("first", ordersync.StatusCancelled, h(5), withPayment)
		// No evidence: cancelled, never paid.
		step("cx", ordersync.StatusPending, h(1), nil)
		step("cx", ordersync.StatusCancelled, h(2), nil)

		for code, want := range map[string]*time.Time{"auth": ptr(h(3)), "hook": ptr(h(1)), "prev": ptr(h(4)), "first": ptr(h(5)), "cx": nil} {
			got := syncOf(t, db, code).PaidAt
			if (got == nil) != (want == nil) || (got != nil && !got.Equal(*want)) {
				t.Errorf("%s: paid at %v, want %v", code, got, want)
			}
			if msgs := outboxFor(t, db, code); slices.ContainsFunc(msgs, func(m ordersync.OutboxMessage) bool { return m.Subject == ordersync.SubjectPaid }) {
				t.Errorf("%s: a PAID trigger for a payment reversed before any fetch saw it paid", code)
			}
		}

		from, _ := ordersync.ParseDate("2026-11-02")
		to, _ := ordersync.ParseDate("2026-11-04")
		params := ordersync.DailyTotalsParams{Account: ordersync.DefaultAccount, From: from, To: to, Location: time.UTC}
		summed, err := db.DailyTotals(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		oneByOne, err := db.dailyTotals(ctx, params, false)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(summed.Days, oneByOne.Days) {
			t.Errorf("report_buckets' sums %+v, the orders one by one %+v", summed.Days, oneByOne.Days)
		}
		got := map[string][2]int{}
		for _, d := range summed.Days {
			got[d.Date] = [2]int{d.Reversed.Count, d.Cancelled.Count}
		}
		// 2 November: auth, prev, first reversed, cx cancelled; 3 November: hook.
		if want := map[string][2]int{"2026-11-02": {3, 1}, "2026-11-03": {1, 0}}; got["2026-11-02"] != want["2026-11-02"] || got["2026-11-03"] != want["2026-11-03"] {
			t.Errorf("reversed and cancelled per day: %v, want %v", got, want)
		}
		codes := listCodes(t, db, ordersync.OrderFilter{Account: ordersync.DefaultAccount, ReversedFrom: from, Sort: ordersync.SortCreatedAsc})
		slices.Sort(codes)
		if want := []string{"auth", "first", "hook", "prev"}; !slices.Equal(codes, want) {
			t.Errorf("reversed orders: %v, want %v", codes, want)
		}
	})
}

// TestReversalMigration: migration 22 fills the reversals of a mirror an
// older build made, which left their paid time empty: from the earliest
// payment webhook before the cancellation, else the cancellation; the name
// words and the report's buckets follow. Evidence only in an earlier
// document, which the row no longer holds, is what it cannot know.
func TestReversalMigration(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		base := time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)
		h := func(n int) time.Time { return base.Add(time.Duration(n) * time.Hour) }
		seq := int64(0)
		step := func(code string, st ordersync.Status, at time.Time, edit func(map[string]any), events ...ordersync.EventRecord) {
			t.Helper()
			seq++
			edits := []func(map[string]any){func(doc map[string]any) { doc["created"] = base.Format("2006-01-02T15:04:05.000Z") }}
			if edit != nil {
				edits = append(edits, edit)
			}
			p := fetched(orderDoc(t, code, int(seq)+500, st, edits...), seq, events...)
			p.FetchedAt = at
			apply(t, db, p)
		}
		step("auth", ordersync.StatusPending, h(1), nil)
		step("auth", ordersync.StatusCancelled, h(3), withPayment)
		step("hook", ordersync.StatusPending, h(2), nil, webhook("hook", ordersync.EventSuccessPayment, h(1)))
		step("hook", ordersync.StatusCancelled, h(26), withPayment)
		step("prev", ordersync.StatusPending, h(1), withBuyerOnly)
		step("prev", ordersync.StatusCancelled, h(4), nil)
		step("cx", ordersync.StatusPending, h(1), nil)
		step("cx", ordersync.StatusCancelled, h(2), nil)
		step("seen", ordersync.StatusPaid, h(1), nil)
		step("seen", ordersync.StatusCancelled, h(6), nil)
		// The orders are written at the current schema, then the schema is
		// taken down to 21 and the older build's paid times put back.
		_, unlock := migrateDownTo(t, db, 21)
		unlock()
		// What the older build wrote: no paid time without a PAID fetch.
		for _, q := range []string{`UPDATE orders SET paid_at = NULL WHERE order_code IN ('auth', 'hook', 'prev')`,
			`UPDATE order_name_tokens SET paid_at = NULL WHERE order_row IN (SELECT id FROM orders WHERE order_code IN ('auth', 'hook', 'prev'))`} {
			if _, err := db.write.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("migrate up: %v", err)
		}
		for code, want := range map[string]*time.Time{"auth": ptr(h(3)), "hook": ptr(h(1)), "prev": nil, "cx": nil, "seen": ptr(h(1))} {
			got := syncOf(t, db, code).PaidAt
			if (got == nil) != (want == nil) || (got != nil && !got.Equal(*want)) {
				t.Errorf("%s: paid at %v, want %v", code, got, want)
			}
		}
		var stale int
		if err := db.read.GetContext(ctx, &stale, `SELECT COUNT(*) FROM order_name_tokens t JOIN orders o ON o.id = t.order_row
WHERE (t.paid_at IS NULL) <> (o.paid_at IS NULL)`); err != nil {
			t.Fatal(err)
		}
		if stale != 0 {
			t.Errorf("%d name words without their order's paid time", stale)
		}
		from, _ := ordersync.ParseDate("2026-11-02")
		to, _ := ordersync.ParseDate("2026-11-04")
		params := ordersync.DailyTotalsParams{Account: ordersync.DefaultAccount, From: from, To: to, Location: time.UTC}
		summed, err := db.DailyTotals(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		oneByOne, err := db.dailyTotals(ctx, params, false)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(summed.Days, oneByOne.Days) {
			t.Errorf("report_buckets' sums %+v, the orders one by one %+v", summed.Days, oneByOne.Days)
		}
		reversed := 0
		for _, d := range summed.Days {
			reversed += d.Reversed.Count
		}
		if reversed != 3 {
			t.Errorf("%d reversed after the migration, want 3 (auth, hook, seen)", reversed)
		}
	})
}
