package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestDeliveryLog: one row per webhook-id, replaced when the delivery ends
// again; an order's rows newest first, apart from other orders' and
// accounts'; a replay that does not know the order's status keeps it.
func TestDeliveryLog(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		rec := func(id, endpoint, account, code string, outcome ordersync.DeliveryOutcome, status int, at time.Time) ordersync.DeliveryRecord {
			return ordersync.DeliveryRecord{WebhookID: id, EndpointID: endpoint, Event: ordersync.HookOrderPaid, Account: account,
				OrderCode: code, OrderStatus: ordersync.StatusPaid, Outcome: outcome, Attempts: 1, Status: status, At: at}
		}
		dead := rec("msg_b", "wms", "default", "A1", ordersync.DeliveryDeadLettered, 422, testNow.Add(2*time.Second))
		dead.Attempts, dead.Detail = 3, "dead letter 7: refused: "+strings.Repeat("no such order ", 100)
		if err := db.RecordDeliveries(ctx, []ordersync.DeliveryRecord{
			rec("msg_a", "erp", "default", "A1", ordersync.DeliveryDelivered, 204, testNow),
			dead,
			rec("msg_c", "erp", "default", "B2", ordersync.DeliveryDelivered, 200, testNow.Add(time.Second)),
			rec("msg_d", "erp", "other", "A1", ordersync.DeliveryDelivered, 200, testNow.Add(time.Second)),
		}); err != nil {
			t.Fatalf("RecordDeliveries: %v", err)
		}
		got, err := db.ListDeliveries(ctx, ordersync.DeliveryFilter{Account: "default", OrderCode: "A1"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].WebhookID != "msg_b" || got[1].WebhookID != "msg_a" {
			t.Fatalf("A1's deliveries: %+v; want msg_b, msg_a", got)
		}
		if g := got[0]; g.EndpointID != "wms" || g.Event != ordersync.HookOrderPaid || g.OrderStatus != ordersync.StatusPaid ||
			g.Outcome != ordersync.DeliveryDeadLettered || g.Attempts != 3 || g.Status != 422 || !g.At.Equal(testNow.Add(2*time.Second)) ||
			!strings.HasPrefix(g.Detail, "dead letter 7: refused: no such order") || len(g.Detail) > maxDetail+len("…") {
			t.Errorf("the dead-lettered delivery read back as %+v", g)
		}

		// The dead letter replayed: the same webhook-id ends again, without
		// knowing the order's status; and twice in one call, the last wins.
		replayed := rec("msg_b", "wms", "default", "A1", ordersync.DeliveryDelivered, 200, testNow.Add(time.Minute))
		replayed.OrderStatus, replayed.Detail = "", "replay of delivery dead letter 7"
		again := replayed
		again.At, again.Status = testNow.Add(2*time.Minute), 202
		if err := db.RecordDeliveries(ctx, []ordersync.DeliveryRecord{replayed, again}); err != nil {
			t.Fatalf("RecordDeliveries again: %v", err)
		}
		got, err = db.ListDeliveries(ctx, ordersync.DeliveryFilter{Account: "default", OrderCode: "A1", Limit: 1})
		if err != nil || len(got) != 1 {
			t.Fatalf("ListDeliveries limit 1: %+v, %v", got, err)
		}
		if g := got[0]; g.WebhookID != "msg_b" || g.Outcome != ordersync.DeliveryDelivered || g.Status != 202 || g.Attempts != 1 ||
			g.OrderStatus != ordersync.StatusPaid || g.Detail != again.Detail || !g.At.Equal(again.At) {
			t.Errorf("after the replay: %+v", g)
		}
		if all, _ := db.ListDeliveries(ctx, ordersync.DeliveryFilter{}); len(all) != 4 {
			t.Errorf("%d rows in all, want 4: one per webhook-id", len(all))
		}

		for name, bad := range map[string]ordersync.DeliveryRecord{
			"no webhook-id": {EndpointID: "erp", Event: ordersync.HookOrderPaid, Outcome: ordersync.DeliveryDelivered},
			"no endpoint":   {WebhookID: "msg_x", Event: ordersync.HookOrderPaid, Outcome: ordersync.DeliveryDelivered},
			"no outcome":    {WebhookID: "msg_x", EndpointID: "erp", Event: ordersync.HookOrderPaid},
		} {
			if err := db.RecordDeliveries(ctx, []ordersync.DeliveryRecord{bad}); err == nil {
				t.Errorf("%s: RecordDeliveries succeeded", name)
			}
		}
	})
}

// TestPruneDeliveryLog: rows that ended before the cut-off go, oldest first
// and at most limit per call; later ones stay.
func TestPruneDeliveryLog(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		var recs []ordersync.DeliveryRecord
		for h := range 5 {
			recs = append(recs, ordersync.DeliveryRecord{WebhookID: fmt.Sprintf("msg_%d", h), EndpointID: "erp", Event: ordersync.HookOrderPaid,
				Account: "default", OrderCode: fmt.Sprintf("O%d", h), Outcome: ordersync.DeliveryDelivered, Attempts: 1, Status: 200,
				At: testNow.Add(time.Duration(h) * time.Hour)})
		}
		if err := db.RecordDeliveries(ctx, recs); err != nil {
			t.Fatal(err)
		}
		cutoff := testNow.Add(150 * time.Minute) // hours 0, 1 and 2
		for _, want := range []int{2, 1, 0} {
			if n, err := db.PruneDeliveryLog(ctx, cutoff, 2); err != nil || n != want {
				t.Fatalf("PruneDeliveryLog(limit 2) = %d, %v; want %d", n, err, want)
			}
		}
		left, err := db.ListDeliveries(ctx, ordersync.DeliveryFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range left {
			ids = append(ids, r.WebhookID)
		}
		if want := []string{"msg_4", "msg_3"}; !slices.Equal(ids, want) {
			t.Errorf("left %q, want %q", ids, want)
		}
		if _, err := db.PruneDeliveryLog(ctx, cutoff, 0); err == nil {
			t.Error("PruneDeliveryLog with limit 0 succeeded")
		}
	})
}

// TestDeliveredSettlesDeadLetters: a delivery that ends delivered marks
// its endpoint's pending dead letter of the same webhook-id replayed, in
// the same write, so the failed count (PendingDeliveryDeadLetters, which
// the overview reads too) drops with it; other endpoints' letters, other
// webhook-ids and failures again leave letters pending.
func TestDeliveredSettlesDeadLetters(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		letter := func(endpoint, id string) int64 {
			n, err := db.AddDeliveryDeadLetter(ctx, ordersync.DeliveryDeadLetter{EndpointID: endpoint, Event: ordersync.HookOrderPaid,
				WebhookID: id, OrderCode: "C-" + id, Attempts: 3, LastStatus: 500, Body: []byte(`{}`), CreatedAt: testNow})
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		a1, a2, b1 := letter("erp", "msg_1"), letter("erp", "msg_2"), letter("wms", "msg_1")
		letter("wms", "msg_3")
		if got, err := db.PendingDeliveryDeadLetters(ctx); err != nil || got["erp"] != 2 || got["wms"] != 2 {
			t.Fatalf("pending before: %v, %v; want erp 2, wms 2", got, err)
		}
		rec := func(endpoint, id string, outcome ordersync.DeliveryOutcome) ordersync.DeliveryRecord {
			return ordersync.DeliveryRecord{WebhookID: id, EndpointID: endpoint, Event: ordersync.HookOrderPaid,
				OrderCode: "C-" + id, Outcome: outcome, Attempts: 1, Status: 200, At: testNow.Add(time.Minute)}
		}
		r1, r2 := rec("erp", "msg_1", ordersync.DeliveryDelivered), rec("erp", "msg_2", ordersync.DeliveryDeadLettered)
		if err := db.RecordDeliveries(ctx, []ordersync.DeliveryRecord{r1, r2}); err != nil {
			t.Fatal(err)
		}
		got, err := db.PendingDeliveryDeadLetters(ctx)
		if err != nil || got["erp"] != 1 || got["wms"] != 2 {
			t.Fatalf("pending after: %v, %v; want erp 1 (msg_2 failed again), wms 2 (another endpoint)", got, err)
		}
		for id, want := range map[int64]bool{a1: true, a2: false, b1: false} {
			dl, err := db.FindDeliveryDeadLetter(ctx, id)
			if err != nil || (dl.ReplayedAt != nil) != want {
				t.Errorf("letter %d replayed %v, want %v (%v)", id, dl != nil && dl.ReplayedAt != nil, want, err)
			}
		}
	})
}

// TestDeliveryFailuresKept: each failed end of a delivery is kept beside
// its latest end (the dispatcher giving up, then a replay failing again,
// then one delivering), listed newest first with Failures and not without
// it, and pruned with the log.
func TestDeliveryFailuresKept(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		end := func(outcome ordersync.DeliveryOutcome, attempts, status int, at time.Duration) ordersync.DeliveryRecord {
			return ordersync.DeliveryRecord{WebhookID: "msg_f", EndpointID: "wms", Event: ordersync.HookOrderPaid, Account: "default",
				OrderCode: "F1", OrderStatus: ordersync.StatusPaid, Outcome: outcome, Attempts: attempts, Status: status,
				Detail: fmt.Sprint("answer ", status), At: testNow.Add(at)}
		}
		for _, r := range []ordersync.DeliveryRecord{end(ordersync.DeliveryDeadLettered, 83, 503, 0),
			end(ordersync.DeliveryDeadLettered, 1, 500, time.Hour), end(ordersync.DeliveryDelivered, 1, 200, 2*time.Hour)} {
			if err := db.RecordDeliveries(ctx, []ordersync.DeliveryRecord{r}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := db.ListDeliveries(ctx, ordersync.DeliveryFilter{Account: "default", OrderCode: "F1", Failures: true})
		if err != nil {
			t.Fatal(err)
		}
		var ends []string
		for _, r := range got {
			ends = append(ends, fmt.Sprintf("%s %d×%d %s %s", r.Outcome, r.Attempts, r.Status, r.Detail, r.At.Sub(testNow)))
		}
		want := []string{"delivered 1×200 answer 200 2h0m0s", "dead_lettered 1×500 answer 500 1h0m0s", "dead_lettered 83×503 answer 503 0s"}
		if !slices.Equal(ends, want) {
			t.Errorf("F1's ends: %q, want %q", ends, want)
		}
		if latest, _ := db.ListDeliveries(ctx, ordersync.DeliveryFilter{Account: "default", OrderCode: "F1"}); len(latest) != 1 {
			t.Errorf("without Failures: %d rows, want the latest alone", len(latest))
		}
		if _, err := db.PruneDeliveryLog(ctx, testNow.Add(90*time.Minute), 10); err != nil {
			t.Fatal(err)
		}
		got, _ = db.ListDeliveries(ctx, ordersync.DeliveryFilter{Account: "default", OrderCode: "F1", Failures: true})
		if len(got) != 1 || got[0].Outcome != ordersync.DeliveryDelivered {
			t.Errorf("after pruning before 1h30: %+v, want the delivered end alone", got)
		}
	})
}
