package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestOverview: the overview's figures are the rows the mirror holds, on
// both databases: webhooks of the window and those mirrored, the sync lag
// of those that are their order's latest, orders never fetched, the
// check backlog, the outbox's oldest unsent message, dead letters not
// replayed by reason, and each endpoint's deliveries of the health window.
func TestOverview(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		now := time.Date(2026, 10, 10, 18, 10, 0, 0, time.UTC)
		ev := func(id, code string, at time.Time) ordersync.EventRecord {
			return ordersync.EventRecord{MsgID: id, Account: ordersync.DefaultAccount, ReceivedAt: at, Type: ordersync.EventUpdated, OrderCode: code}
		}
		// fetched() fetches seq s at 18:05:00 + s seconds.
		apply(t, db, fetched(orderDoc(t, "a", 1, ordersync.StatusPending), 1, ev("e1", "a", time.Date(2026, 10, 10, 18, 5, 0, 0, time.UTC))))
		apply(t, db, fetched(orderDoc(t, "b", 2, ordersync.StatusPending), 100, ev("e2", "b", time.Date(2026, 10, 10, 18, 6, 0, 0, time.UTC))))
		old := ev("e0", "", now.Add(-10*time.Minute))
		old.Outcome = ordersync.OutcomeRejected
		late := ev("e3", "", now.Add(-time.Minute))
		late.Outcome = ordersync.OutcomeRejected
		if err := db.RecordEvents(ctx, []ordersync.EventRecord{old, late}); err != nil {
			t.Fatal(err)
		}
		if err := db.RecordOrderRef(ctx, ordersync.OrderRef{Account: ordersync.DefaultAccount, Code: "c"}); err != nil {
			t.Fatal(err)
		}
		for i, r := range []ordersync.DeadLetterReason{ordersync.ReasonMalformed, ordersync.ReasonUnknownOrder, ordersync.ReasonUnknownOrder, ordersync.ReasonMalformed} {
			id, err := db.AddDeadLetter(ctx, ordersync.DeadLetter{MsgID: fmt.Sprint("dl", i), Account: ordersync.DefaultAccount, Reason: r,
				Attempts: 1, Body: []byte(`{}`), CreatedAt: now.Add(-time.Hour)}) // its event log row out of the window
			if err != nil {
				t.Fatal(err)
			}
			if i == 3 {
				if err := db.MarkDeadLetterReplayed(ctx, id, now); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, id := range []string{"ep1", "ep2"} {
			if _, err := db.CreateEndpoint(ctx, ordersync.EndpointParams{ID: id, URL: "https://" + id + ".example/hook",
				Events: ordersync.HookEvents, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}); err != nil {
				t.Fatal(err)
			}
		}
		rec := func(id, ep string, outcome ordersync.DeliveryOutcome, status int, detail string, at time.Time) ordersync.DeliveryRecord {
			return ordersync.DeliveryRecord{WebhookID: id, EndpointID: ep, Event: ordersync.HookOrderPaid, Account: ordersync.DefaultAccount,
				OrderCode: "a", Outcome: outcome, Attempts: 1, Status: status, Detail: detail, At: at}
		}
		if err := db.RecordDeliveries(ctx, []ordersync.DeliveryRecord{
			rec("w1", "ep1", ordersync.DeliveryDelivered, 200, "", now.Add(-10*time.Minute)),
			rec("w2", "ep1", ordersync.DeliveryDeadLettered, 500, "boom", now.Add(-2*time.Minute)),
			rec("w3", "ep2", ordersync.DeliveryDelivered, 200, "", now.Add(-2*time.Hour)),
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.AddDeliveryDeadLetter(ctx, ordersync.DeliveryDeadLetter{EndpointID: "ep1", Event: ordersync.HookOrderPaid, WebhookID: "w2",
			Account: ordersync.DefaultAccount, OrderCode: "a", Attempts: 1, LastStatus: 500, Body: []byte(`{}`), CreatedAt: now}); err != nil {
			t.Fatal(err)
		}

		got, err := db.Overview(ctx, ordersync.OverviewParams{Account: ordersync.DefaultAccount, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if got.Webhooks != 3 || got.Mirrored != 2 {
			t.Errorf("webhooks %d, mirrored %d; want 3 and 2 of the last 5 minutes", got.Webhooks, got.Mirrored)
		}
		if want := (ordersync.SyncLag{Samples: 2, Median: time.Second, Max: 40 * time.Second}); got.Lag != want {
			t.Errorf("lag %+v, want %+v", got.Lag, want)
		}
		if got.Waiting != 1 || got.OldestWaiting.IsZero() {
			t.Errorf("waiting %d since %v, want the placeholder c", got.Waiting, got.OldestWaiting)
		}
		backlog, err := db.CheckBacklog(ctx, ordersync.DefaultAccount, now)
		if err != nil || got.Checks != backlog || backlog.Due == 0 {
			t.Errorf("checks %+v, the schedule's backlog %+v (%v)", got.Checks, backlog, err)
		}
		pending, err := db.PendingOutbox(ctx, 100)
		if err != nil || got.Unsent != len(pending) || len(pending) == 0 || got.OldestUnsent == nil ||
			got.OldestUnsent.ID != pending[0].ID || got.OldestUnsent.OrderCode != "a" {
			t.Errorf("unsent %d, oldest %+v; the outbox has %d pending (%v)", got.Unsent, got.OldestUnsent, len(pending), err)
		}
		if fmt.Sprint(got.DeadLetters) != "[{unknown_order 2} {malformed 1}]" {
			t.Errorf("dead letters %v", got.DeadLetters)
		}
		if len(got.Endpoints) != 2 {
			t.Fatalf("endpoints %+v", got.Endpoints)
		}
		ep1, ep2 := got.Endpoints[0], got.Endpoints[1]
		if f := ep1.LastFailure; ep1.ID != "ep1" || ep1.Delivered != 1 || ep1.Failed != 1 || ep1.DeadLetters != 1 || f == nil ||
			ordersync.DeliveryError(f.Status, f.Detail) != "HTTP 500: boom" || !f.At.Equal(now.Add(-2*time.Minute)) {
			t.Errorf("ep1 %+v", ep1)
		}
		if ep2.ID != "ep2" || ep2.Delivered != 0 || ep2.Failed != 0 || ep2.LastFailure != nil {
			t.Errorf("ep2 %+v: a delivery older than the health window counts", ep2)
		}
	})
}
