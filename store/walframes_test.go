package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
)

// TestWALFramesPerOrder maps the WAL frames that new orders and their
// status changes cost to the b-trees (tables and indexes) they rewrite: the
// loadtest's orders (created in the simulator by amount, reference
// load-NNNNNN, no buyer) applied in batches, then each paid and then
// finalized the same way, each batch with its fetch sequence, its relay's
// mark and the back office's indexer, on a
// mirror whose checkpoints never run, then each frame's page looked up in
// dbstat by the sqlite3 command. A measuring tool, not a check: it runs
// when ORDERSYNC_WAL_FRAMES gives the orders ("20000" or "20000/20" for
// batches of 20; "20000/20:items" for the benchmarks' orders, three line
// items and a metadata entry each; docs/benchmarks.md has its figures).
func TestWALFramesPerOrder(t *testing.T) {
	spec := os.Getenv("ORDERSYNC_WAL_FRAMES")
	if spec == "" {
		t.Skip("ORDERSYNC_WAL_FRAMES not set: a measuring tool")
	}
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Skip("needs the sqlite3 command for dbstat")
	}
	total, batchSize := 20000, 20
	spec, kind, _ := strings.Cut(spec, ":")
	n, b, _ := strings.Cut(spec, "/")
	var err error
	if total, err = strconv.Atoi(n); err != nil {
		t.Fatalf("ORDERSYNC_WAL_FRAMES=%q: %v", spec, err)
	}
	if b != "" {
		if batchSize, err = strconv.Atoi(b); err != nil {
			t.Fatalf("ORDERSYNC_WAL_FRAMES=%q: %v", spec, err)
		}
	}
	var orders []*ordersync.Order
	switch kind {
	case "":
		orders = loadtestOrders(t, total)
	case "items":
		orders = make([]*ordersync.Order, total)
		for i := range orders {
			code := fmt.Sprintf("w%07d", i)
			if orders[i], err = ordersync.DecodeOrder(fmt.Appendf(nil, benchDoc, i+1, code, code, code, "frames", ordersync.StatusPending, i, code)); err != nil {
				t.Fatal(err)
			}
		}
	default:
		t.Fatalf("ORDERSYNC_WAL_FRAMES=%q: the kind of orders is \"items\" or none", spec+":"+kind)
	}

	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "mirror.db")
	db, err := Open(ctx, Config{URL: path, CheckpointInterval: time.Hour, MaxWALBytes: 16 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var pageSize int64
	if err := db.write.GetContext(ctx, &pageSize, "PRAGMA page_size"); err != nil {
		t.Fatal(err)
	}
	frameSize := pageSize + 24
	// The migrations' frames are not the orders'.
	if _, err := db.write.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	walFrames := func() int64 {
		fi, err := os.Stat(path + "-wal")
		if err != nil || fi.Size() < 32 {
			return 0
		}
		return (fi.Size() - 32) / frameSize
	}
	type span struct {
		step     string
		from, to int64
	}
	var spans []span
	step := func(name string, fn func() error) {
		from := walFrames()
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		spans = append(spans, span{name, from, walFrames()})
	}
	seq := int64(0)
	// Each order's life: created, paid (the status and the payment's
	// fields change), then finalized (only the status changes); a changed
	// document is encoded anew, as a fetch would bring it.
	phases := []struct {
		name  string
		event ordersync.EventType
		edit  func(o ordersync.Order) *ordersync.Order
	}{
		{"new", ordersync.EventCreated, func(o ordersync.Order) *ordersync.Order { return &o }},
		{"paid", ordersync.EventSuccessPayment, func(o ordersync.Order) *ordersync.Order {
			o.OrderStatus, o.Raw = ordersync.StatusPaid, nil
			o.Payment = &ordersync.Payment{AuthorizationCode: "A" + o.OrderCode, VoucherURL: "https://pay.example/v/" + o.OrderCode}
			return &o
		}},
		{"finalized", ordersync.EventFinalized, func(o ordersync.Order) *ordersync.Order {
			o.OrderStatus, o.Raw = ordersync.StatusFinalized, nil
			return &o
		}},
	}
	for _, phase := range phases {
		for todo := orders; len(todo) > 0; {
			chunk := todo[:min(len(todo), batchSize)]
			todo = todo[len(chunk):]
			params := make([]ordersync.ApplyParams, len(chunk))
			for i, o := range chunk {
				seq++
				o = phase.edit(*o)
				chunk[i] = o
				params[i] = ordersync.ApplyParams{Account: "default", Order: o, Seq: seq, Cause: ordersync.CauseWebhook, FetchedAt: time.Now(),
					Events: []ordersync.EventRecord{{MsgID: fmt.Sprintf("%032x", uint64(seq)*11400714819323198485), Type: phase.event,
						OrderType: "FASTLINK_CHARGE", OrderID: o.OrderID, ReceivedAt: time.Now(), Signature: ordersync.SignatureValid}}}
			}
			step(phase.name+": fetch sequence", func() error { _, err := db.AllocateFetchSeq(ctx, len(chunk)); return err })
			step(phase.name+": apply", func() error { _, err := db.ApplyOrders(ctx, params); return err })
			step(phase.name+": relay", func() error {
				msgs, err := db.PendingOutbox(ctx, 1000)
				if err != nil {
					return err
				}
				ids := make([]int64, len(msgs))
				for i, m := range msgs {
					ids[i] = m.ID
				}
				return db.MarkOutboxSent(ctx, ids, time.Now())
			})
			// The back office's indexer, which the service runs after
			// the writes, as after every batch here.
			step(phase.name+": index", func() error { _, err := db.IndexNow(ctx); return err })
		}
	}

	// A copy of the file and its WAL, before Close checkpoints them.
	snap := filepath.Join(dir, "snap.db")
	copyFile(t, path, snap)
	copyFile(t, path+"-wal", snap+"-wal")
	wal, err := os.ReadFile(snap + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sqlite3", snap, "SELECT name, pageno FROM dbstat").Output()
	if err != nil {
		t.Fatal(err)
	}
	owner := map[uint32]string{}
	for line := range strings.Lines(string(out)) {
		name, page, _ := strings.Cut(strings.TrimSpace(line), "|")
		p, _ := strconv.Atoi(page)
		owner[uint32(p)] = name
	}
	frames := map[string]map[string]int{}
	var steps []string
	for _, sp := range spans {
		if frames[sp.step] == nil {
			frames[sp.step] = map[string]int{}
		}
		for f := sp.from; f < sp.to; f++ {
			page := binary.BigEndian.Uint32(wal[32+f*frameSize:])
			frames[sp.step][owner[page]]++
		}
	}
	t.Logf("%d orders created, paid and finalized in batches of %d: %d WAL frames (%d bytes each)", total, batchSize, walFrames(), frameSize)
	for _, sp := range spans {
		if frames[sp.step] != nil && !slices.Contains(steps, sp.step) {
			steps = append(steps, sp.step)
		}
	}
	for _, name := range steps {
		m := frames[name]
		var trees []string
		sum := 0
		for tree, n := range m {
			trees = append(trees, tree)
			sum += n
		}
		slices.SortFunc(trees, func(a, b string) int { return m[b] - m[a] })
		t.Logf("%s: %.2f frames, %.0f bytes per order", name, float64(sum)/float64(total), float64(int64(sum)*frameSize)/float64(total))
		for _, tree := range trees {
			t.Logf("  %-36s %.3f", tree, float64(m[tree])/float64(total))
		}
	}
}

// loadtestOrders are n orders as ordersync-lab loadtest creates them, as
// the simulator's GET returns them.
func loadtestOrders(t *testing.T, n int) []*ordersync.Order {
	t.Helper()
	s, err := sim.New(sim.Config{SecretKey: "frames", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	orders := make([]*ordersync.Order, n)
	for i := range orders {
		amount := ordersync.MustAmount(fmt.Sprintf("%d.%02d", 5+i%200, i%100))
		res, err := s.CreatePaymentLink(ordersync.PaymentLinkParams{OrderReference: fmt.Sprintf("load-%06d", i), Amount: &amount})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("GET", "/paymentlink/order/"+res.OrderCode, nil)
		req.Header.Set("Authorization", "Bearer frames")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		body, _ := io.ReadAll(rec.Result().Body)
		if orders[i], err = ordersync.DecodeOrder(body); err != nil {
			t.Fatalf("order %d: %v: %s", i, err, body)
		}
	}
	return orders
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
