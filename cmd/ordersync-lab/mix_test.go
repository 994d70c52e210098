package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMix runs the real mix in a small size over a prefilled mirror and
// holds the report to what the run did: every phase cost CPU and wrote
// bytes, every order was fetched for its creation and again for its
// changes, the data directory grew. A second run reuses the prefill; a
// prefill made by another binary is refused.
func TestMix(t *testing.T) {
	t.Parallel()
	opts := defaultMixOptions()
	opts.Orders, opts.Prefill, opts.Connections = 100, 30, 8
	opts.PrefillDir = filepath.Join(t.TempDir(), "prefill")
	opts.exe = testBinary
	var out bytes.Buffer
	rep, err := runMix(t.Context(), &out, opts)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	printMixReport(&out, rep)
	t.Log("\n" + out.String())

	c, s := rep.Create, rep.Change
	if want := opts.Orders + opts.Orders/mixDuplicateEvery; c.Webhooks != want {
		t.Errorf("creation: %d webhooks answered 200, want %d (one an order and the duplicates)", c.Webhooks, want)
	}
	if rep.Paid+rep.CancelledUnpaid != opts.Orders || rep.Finalized == 0 || rep.Reversed == 0 || rep.Late == 0 || rep.Duplicates == 0 {
		t.Errorf("the mix sent %d paid, %d cancelled unpaid, %d finalized, %d reversed, %d late, %d duplicates",
			rep.Paid, rep.CancelledUnpaid, rep.Finalized, rep.Reversed, rep.Late, rep.Duplicates)
	}
	if s.Changes != opts.Orders+rep.Finalized+rep.Reversed || s.Webhooks <= s.Changes {
		t.Errorf("status changes: %d changes, %d webhooks", s.Changes, s.Webhooks)
	}
	for name, ph := range map[string]mixPhase{"creation": c, "status changes": s} {
		if ph.CPU.Pipeline <= 0 || ph.WriteBytes <= 0 || ph.WriteCalls <= 0 || ph.Fetches < int64(opts.Orders) || ph.Took <= 0 {
			t.Errorf("%s: CPU %s, %d bytes written (%d to write calls), %d fetches for %d orders, took %s", name, ph.CPU.Pipeline, ph.WriteBytes, ph.WriteCalls, ph.Fetches, opts.Orders, ph.Took)
		}
	}
	if rep.perOrderLife() <= c.perChange() || rep.perWebhook() <= 0 {
		t.Errorf("CPU per order life %s, per new order %s, per webhook %s", rep.perOrderLife(), c.perChange(), rep.perWebhook())
	}
	if rep.AckP99 <= 0 || rep.AckP50 > rep.AckP99 || rep.PeakRSS <= 0 {
		t.Errorf("ack p50 %s, p99 %s; peak RSS %d", rep.AckP50, rep.AckP99, rep.PeakRSS)
	}
	b, a := rep.DiskBefore, rep.DiskAfter
	if b.Total <= 0 || a.Total-a.WAL <= b.Total-b.WAL || a.DB <= 0 || a.JetStream <= b.JetStream {
		t.Errorf("data directory before %+v, after %+v", b, a)
	}
	if a.Tables == nil && !strings.Contains(a.TablesErr, "sqlite_dbstat") {
		t.Errorf("no table sizes, and no reason: %q", a.TablesErr)
	}
	if a.Tables != nil && a.Tables["orders"] <= b.Tables["orders"] {
		t.Errorf("dbstat: orders %d bytes before, %d after", b.Tables["orders"], a.Tables["orders"])
	}
	if !strings.Contains(out.String(), "back office freshness in load p50") || !strings.Contains(out.String(), "single changes") {
		t.Errorf("the report lacks the freshness in load and idle:\n%s", out.String())
	}

	out.Reset()
	opts.Orders = mixPaidCycle
	if _, err := runMix(t.Context(), &out, opts); err != nil {
		t.Fatalf("second run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "prepared with 30 open orders") {
		t.Errorf("the second run did not reuse the prefill:\n%s", out.String())
	}
	if err := os.WriteFile(filepath.Join(opts.PrefillDir, "ordersync.sha256"), []byte("another"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runMix(t.Context(), &out, opts); err == nil || !strings.Contains(err.Error(), "another ordersync binary") {
		t.Errorf("a prefill of another binary: %v", err)
	}
}
