package store

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/rusage"
)

// benchDoc is an order detail with three line items, as the service sends it.
const benchDoc = `{"orderId":%d,"orderCode":"%s","orderReference":"ref-%s","name":"Pedido %s","description":"%s",` +
	`"lineItems":[{"productId":884213,"sku":"COMBO-CLASICO","name":"Combo Clásico","price":6.50,"promoPrice":null,"quantity":2,"imageUrl":"https://cdn.example.com/p/1.png","subTotal":13.00},` +
	`{"productId":884220,"sku":"SODA-600","name":"Refresco 600 ml","price":1.25,"promoPrice":0.99,"quantity":1,"imageUrl":null,"subTotal":0.99},` +
	`{"productId":884230,"sku":"POSTRE","name":"Flan","price":2.10,"promoPrice":null,"quantity":1,"imageUrl":null,"subTotal":2.10}],` +
	`"orderStatus":"%s","subtotal":16.09,"totalDetails":{"shippingAmount":2.00,"discountAmount":0.10,"surchargeAmount":0},"total":17.99,` +
	`"metadata":[{"name":"numero_orden","value":"A-%d"}],"paymentLinkUrl":"https://pay.example.com/%s","successUrl":"https://shop.example.com/ok",` +
	`"cancelUrl":"https://shop.example.com/cancel","store":{"name":"La Esquina","countryCode":"SV","currencyCode":"USD","currencySymbol":"$",` +
	`"locale":"es-SV","timezone":"America/El_Salvador"},"payment":null,"created":"2026-10-10T18:00:12.345Z"}`

// benchOrder is order n of the benchmarks, in status.
func benchOrder(b *testing.B, n int, status ordersync.Status, desc string) *ordersync.Order {
	return benchOrderCoded(b, n, fmt.Sprintf("b%07d", n), status, desc)
}

// benchOrderCoded is order n with the given code.
func benchOrderCoded(b *testing.B, n int, code string, status ordersync.Status, desc string) *ordersync.Order {
	o, err := ordersync.DecodeOrder(fmt.Appendf(nil, benchDoc, n, code, code, code, desc, status, n, code))
	if err != nil {
		b.Fatal(err)
	}
	return o
}

// upstreamCode is a code for order n as the service makes them: seven
// characters that look random, so that consecutive orders land all over an
// index keyed by code. Distinct for distinct n (n times a number prime to
// 62^7, mod 62^7).
func upstreamCode(n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	const space = 62 * 62 * 62 * 62 * 62 * 62 * 62
	v := uint64(n) * 2654435761 % space
	var c [7]byte
	for i := range c {
		c[i] = alphabet[v%62]
		v /= 62
	}
	return string(c[:])
}

// BenchmarkApplyNewOrders applies batches of 100 new orders, each with the
// webhook event that announced it, to a SQLite mirror that already holds
// 50,000 orders with codes like the service's. It reports orders/s and the
// bytes the process wrote per order (the WAL and its checkpoints, from
// /proc/self/io), which grow with the mirror when new orders land on random
// pages of its indexes.
func BenchmarkApplyNewOrders(b *testing.B) {
	const mirrored, batchSize = 50000, 100
	ctx := context.Background()
	db := benchDB(b)
	n := 0
	batch := func(size int) []ordersync.ApplyParams {
		params := make([]ordersync.ApplyParams, 0, size)
		for range size {
			n++
			params = append(params, ordersync.ApplyParams{Account: "default", Order: benchOrderCoded(b, n, upstreamCode(n), ordersync.StatusPending, "new"),
				Seq: int64(n), Cause: ordersync.CauseWebhook,
				Events: []ordersync.EventRecord{{MsgID: fmt.Sprintf("%032x", uint64(n)*11400714819323198485), Type: ordersync.EventCreated}}})
		}
		return params
	}
	for n < mirrored {
		if _, err := db.ApplyOrders(ctx, batch(500)); err != nil {
			b.Fatal(err)
		}
	}

	written, readable := processWritten()
	applied := benchApply(b, db, func() []ordersync.ApplyParams { return batch(batchSize) })
	if after, ok := processWritten(); ok && readable {
		b.ReportMetric(float64(after-written)/float64(applied), "written-B/order")
	}
}

// processWritten is how many bytes this process has written (wchar of
// /proc/self/io); false where that is not available.
func processWritten() (int64, bool) {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "wchar:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// BenchmarkApplyOrders applies batches of 100 orders with three line items
// each to SQLite: half new orders (PENDING), half earlier ones changed (now
// PAID, so they also write history and two outbox messages). One op is one
// batch; orders/s is the figure to watch.
func BenchmarkApplyOrders(b *testing.B) {
	const batchSize, changedPerBatch = 100, 50
	ctx := context.Background()
	db := benchDB(b)

	doc := func(n int, status ordersync.Status, desc string) *ordersync.Order {
		return benchOrder(b, n, status, desc)
	}
	fetchedAt := time.Now()
	var seq int64
	created, revisit := 0, 0
	batch := func() []ordersync.ApplyParams {
		params := make([]ordersync.ApplyParams, 0, batchSize)
		for i := range batchSize {
			seq++
			var o *ordersync.Order
			if i < changedPerBatch && created >= batchSize {
				// An order created earlier changed: now paid, new description.
				o = doc(revisit%created, ordersync.StatusPaid, fmt.Sprint("fetch ", seq))
				revisit++
			} else {
				o = doc(created, ordersync.StatusPending, "new")
				created++
			}
			params = append(params, ordersync.ApplyParams{Account: "default", Order: o, Seq: seq, FetchedAt: fetchedAt, Cause: ordersync.CauseWebhook,
				Events: []ordersync.EventRecord{{MsgID: fmt.Sprint("ev-", seq), ReceivedAt: fetchedAt, Type: ordersync.EventUpdated}}})
		}
		return params
	}
	// Warm up with orders to revisit.
	if _, err := db.ApplyOrders(ctx, batch()); err != nil {
		b.Fatal(err)
	}

	benchApply(b, db, batch)
}

// benchDB is an empty SQLite mirror, closed when the benchmark ends.
func benchDB(b *testing.B) *DB {
	db, err := Open(context.Background(), Config{URL: filepath.Join(b.TempDir(), "bench.db"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// benchApply applies one batch from next per op, timing and metering only
// ApplyOrders, reports orders/s and CPU-µs per order, and returns how many
// orders applied.
func benchApply(b *testing.B, db *DB, next func() []ordersync.ApplyParams) int {
	var (
		applied int
		elapsed time.Duration
	)
	cpu := rusage.Start(b)
	for b.Loop() {
		b.StopTimer()
		cpu.Stop()
		params := next()
		cpu.Start()
		b.StartTimer()
		start := time.Now()
		// Cancellable, as the pool's commit loop's context is.
		res, err := db.ApplyOrders(b.Context(), params)
		elapsed += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Applied {
				applied++
			}
		}
	}
	cpu.Stop()
	b.ReportMetric(float64(applied)/elapsed.Seconds(), "orders/s")
	cpu.Report(b, applied, "cpu-µs/order")
	return applied
}

// benchMirror is a SQLite mirror of n orders, their statuses in turn from
// statuses.
func benchMirror(b *testing.B, n int, statuses ...ordersync.Status) *DB {
	const batchSize = 500
	ctx := context.Background()
	db := benchDB(b)
	for i := 0; i < n; {
		params := make([]ordersync.ApplyParams, 0, batchSize)
		for ; len(params) < batchSize && i < n; i++ {
			params = append(params, ordersync.ApplyParams{Account: "default", Order: benchOrder(b, i, statuses[i%len(statuses)], "mirror"), Seq: int64(i + 1)})
		}
		if _, err := db.ApplyOrders(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
	return db
}

// BenchmarkCountOrdersByStatus counts a mirror of 50,000 orders, as the
// orders gauge does at scrape time.
func BenchmarkCountOrdersByStatus(b *testing.B) {
	const orders = 50000
	ctx := context.Background()
	db := benchMirror(b, orders, ordersync.StatusPending, ordersync.StatusPaid, ordersync.StatusCancelled)
	for b.Loop() {
		counts, err := db.CountOrdersByStatus(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if total := counts[ordersync.StatusPending] + counts[ordersync.StatusPaid] + counts[ordersync.StatusCancelled]; total != orders {
			b.Fatalf("counted %d orders, want %d: %v", total, orders, counts)
		}
	}
}

// BenchmarkListReconcileCandidates lists 200 orders for an on-demand
// reconcile over a mirror of 50,000 orders of which one in ten can still
// change, as in a mirror that has run for a while.
func BenchmarkListReconcileCandidates(b *testing.B) {
	const orders, limit = 50000, 200
	ctx := context.Background()
	statuses := []ordersync.Status{ordersync.StatusPending}
	for range 9 {
		statuses = append(statuses, ordersync.StatusFinalized)
	}
	db := benchMirror(b, orders, statuses...)
	for b.Loop() {
		refs, err := db.ListReconcileCandidates(ctx, ordersync.ReconcileFilter{Limit: limit})
		if err != nil {
			b.Fatal(err)
		}
		if len(refs) != limit {
			b.Fatalf("%d candidates, want %d", len(refs), limit)
		}
	}
}

// BenchmarkClaimDueChecks claims 20 due checks (a second of the default
// budget) and reads the backlog, as the reconciler does, over a mirror of
// 50,000 orders of which one in ten can still change, all overdue.
func BenchmarkClaimDueChecks(b *testing.B) {
	const orders, limit = 50000, 20
	ctx := context.Background()
	statuses := []ordersync.Status{ordersync.StatusPending}
	for range 9 {
		statuses = append(statuses, ordersync.StatusFinalized)
	}
	db := benchMirror(b, orders, statuses...)
	now := time.Now().Add(time.Hour)
	for b.Loop() {
		due, err := db.ClaimDueChecks(ctx, "default", now, limit, now)
		if err != nil {
			b.Fatal(err)
		}
		if len(due) != limit {
			b.Fatalf("%d claimed, want %d", len(due), limit)
		}
		// Moves the clock on so the claimed stay claimed and others are due.
		now = now.Add(time.Millisecond)
		if _, err := db.CheckBacklog(ctx, "default", now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyStatusChanges applies batches of 10 status changes (PAID,
// then FINALIZED, then a changed description) to orders of a SQLite mirror
// of 5,000, each batch followed by the indexer's pass over it, as the
// pipeline's small batches come: per-batch statements weigh as they do
// there. One op is one batch; cpu-µs/order is the figure to watch.
func BenchmarkApplyStatusChanges(b *testing.B) {
	const mirrored, batchSize = 5000, 10
	ctx := context.Background()
	db := benchMirror(b, mirrored, ordersync.StatusPending)
	if _, err := db.IndexNow(ctx); err != nil {
		b.Fatal(err)
	}
	next, seq := 0, int64(mirrored)
	batch := func() []ordersync.ApplyParams {
		params := make([]ordersync.ApplyParams, 0, batchSize)
		for range batchSize {
			round := next / mirrored
			status, desc := ordersync.StatusPaid, "mirror"
			switch {
			case round == 1:
				status = ordersync.StatusFinalized
			case round > 1:
				status, desc = ordersync.StatusFinalized, fmt.Sprint("round ", round)
			}
			seq++
			params = append(params, ordersync.ApplyParams{Account: "default", Order: benchOrder(b, next%mirrored, status, desc), Seq: seq,
				Cause: ordersync.CauseWebhook, Events: []ordersync.EventRecord{{MsgID: fmt.Sprint("sc-", seq), Type: ordersync.EventUpdated}}})
			next++
		}
		return params
	}
	applied := 0
	cpu := rusage.Start(b)
	for b.Loop() {
		b.StopTimer()
		cpu.Stop()
		params := batch()
		cpu.Start()
		b.StartTimer()
		res, err := db.ApplyOrders(b.Context(), params) // cancellable, as the pool's is
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Changed {
				applied++
			}
		}
		if _, err := db.IndexNow(ctx); err != nil {
			b.Fatal(err)
		}
	}
	cpu.Stop()
	cpu.Report(b, applied, "cpu-µs/order")
}
