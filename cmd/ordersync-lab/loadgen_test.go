package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/store"
)

// TestLoadtest runs the load generator in a small size against the real
// binary (the one TestMain built): every ingest webhook is answered
// 200 with latencies measured, and the end-to-end phase ends only when the
// mirror holds every order, each fetched upstream at least once.
func TestLoadtest(t *testing.T) {
	// Half a second of load on a pipeline of its own, beside the runs
	// that mostly wait: every figure the report gives is measured within
	// it, and the end-to-end phase's 200 orders are each still checked.
	t.Parallel()
	opts := defaultLoadOptions()
	opts.Duration, opts.Connections, opts.IngestOrders, opts.Orders = 500*time.Millisecond, 16, 100, 200
	opts.E2ETimeout = 30 * time.Second
	opts.exe = testBinary

	var out bytes.Buffer
	rep, err := runLoadtest(context.Background(), &out, opts)
	if err != nil {
		t.Log("\n" + out.String())
		t.Fatal(err)
	}
	printLoadReport(&out, rep)
	t.Log("\n" + out.String())

	in, e := rep.Ingest, rep.E2E
	switch {
	case in.Webhooks == 0 || in.Failed != 0:
		t.Errorf("ingest: %d answered 200, %d failed", in.Webhooks, in.Failed)
	case in.P50 <= 0 || in.P50 > in.P99 || in.P99 > in.Max:
		t.Errorf("ingest latencies out of order: p50 %s, p99 %s, max %s", in.P50, in.P99, in.Max)
	case in.PeakRSS <= 0 || e.PeakRSS <= 0:
		t.Errorf("peak RSS not measured: ingest %d, end to end %d", in.PeakRSS, e.PeakRSS)
	case in.CPU.Pipeline <= 0 || in.CPU.Harness <= 0 || e.CPU.Pipeline <= 0 || e.CPU.Harness <= 0:
		t.Errorf("CPU not measured: ingest %+v, end to end %+v", in.CPU, e.CPU)
	}
	if e.Orders != opts.Orders || e.Mirrored < opts.Orders {
		t.Errorf("end to end: %d of %d orders mirrored", e.Mirrored, opts.Orders)
	}
	// The end-to-end rate is reported, not judged: its target counted the
	// load generator's and the simulator's CPU as the pipeline's.
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "end to end") && strings.Contains(line, "target") {
			t.Errorf("the end-to-end rate is held to a target: %q", line)
		}
	}
	if e.FetchesPerOrder < 1 {
		t.Errorf("end to end: %.2f upstream fetches per order: some order was mirrored without a fetch", e.FetchesPerOrder)
	}
}

// TestQuantile pins the nearest-rank quantile the load report uses.
func TestQuantile(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		out := make([]time.Duration, len(n))
		for i, v := range n {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{nil, 0.5, 0},
		{ms(7), 0.99, 7 * time.Millisecond},
		{ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.99, 10 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.5, 5 * time.Millisecond},
		{ms(1, 2, 3), 1, 3 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := quantile(tt.sorted, tt.q); got != tt.want {
			t.Errorf("quantile(%v, %v) = %s, want %s", tt.sorted, tt.q, got, tt.want)
		}
	}
}

// TestCountInterval pins how often the end-to-end phase counts the mirror:
// rarely while most orders are still to come, often near the end.
func TestCountInterval(t *testing.T) {
	tests := []struct {
		mirrored, total int
		elapsed         time.Duration
		want            time.Duration
	}{
		{0, 20000, 0, 10 * time.Millisecond},                    // nothing to go by
		{1000, 20000, time.Second, 250 * time.Millisecond},      // 19 s to go: the most
		{16000, 20000, 4 * time.Second, 125 * time.Millisecond}, // 1 s to go: an eighth
		{19990, 20000, 5 * time.Second, 10 * time.Millisecond},  // 2.5 ms to go: the least
		{20000, 20000, 5 * time.Second, 10 * time.Millisecond},  // done
		{25000, 20000, 5 * time.Second, 10 * time.Millisecond},  // more than asked for
	}
	for _, tt := range tests {
		if got := countInterval(tt.mirrored, tt.total, tt.elapsed); got != tt.want {
			t.Errorf("countInterval(%d, %d, %s) = %s, want %s", tt.mirrored, tt.total, tt.elapsed, got, tt.want)
		}
	}
}

// TestCountMirrored: the load test waits for fetched orders; an order
// recorded but not fetched yet does not count.
func TestCountMirrored(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, store.Config{URL: filepath.Join(t.TempDir(), "mirror.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.RecordOrderRef(ctx, ordersync.OrderRef{Account: ordersync.DefaultAccount, Code: "recorded"}); err != nil {
		t.Fatal(err)
	}
	o, err := ordersync.DecodeOrder([]byte(`{"orderId":1,"orderCode":"fetched","orderStatus":"PAID"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ApplyOrders(ctx, []ordersync.ApplyParams{{Account: ordersync.DefaultAccount, Order: o, Seq: 1}}); err != nil {
		t.Fatal(err)
	}
	if n, err := countMirrored(ctx, db); err != nil || n != 1 {
		t.Errorf("countMirrored = %d, %v; want 1 (the fetched order only)", n, err)
	}
}

// TestAwaitMirroredKeepsLastCount: when the time limit ends the wait, the
// count it cut short fails; the report keeps the count before it rather
// than saying the mirror holds none.
func TestAwaitMirroredKeepsLastCount(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	counts := []int{5, 7}
	count := func(ctx context.Context) (int, error) {
		if len(counts) == 0 {
			cancel() // the time limit, hit while counting
			return 0, ctx.Err()
		}
		n := counts[0]
		counts = counts[1:]
		return n, nil
	}
	n, err := awaitMirrored(ctx, count, 20, time.Now())
	if err != nil || n != 7 {
		t.Errorf("awaitMirrored = %d, %v; want 7 (the last count that succeeded), nil", n, err)
	}
}

// TestAwaitMirroredFailsOnCountError: a count that fails while time is left
// is an error of its own, not a short count.
func TestAwaitMirroredFailsOnCountError(t *testing.T) {
	broken := errors.New("database gone")
	n, err := awaitMirrored(context.Background(), func(context.Context) (int, error) { return 0, broken }, 20, time.Now())
	if !errors.Is(err, broken) || n != 0 {
		t.Errorf("awaitMirrored = %d, %v; want 0, %v", n, err, broken)
	}
}
