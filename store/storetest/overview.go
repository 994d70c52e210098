package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// testOverview: the overview counts what the store holds: the window's
// webhooks and those mirrored, the lag of the mirrored ones that are
// their order's latest, orders never fetched, the check backlog, the
// outbox's oldest unsent message, dead letters not replayed by reason.
func testOverview(t *testing.T, s Store) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	ev := func(id, code string, at time.Time) ordersync.EventRecord {
		return ordersync.EventRecord{MsgID: id, Account: account, ReceivedAt: at, Type: ordersync.EventUpdated, OrderCode: code}
	}
	sq := seqs(t, s, 2)
	for i, code := range []string{"Ov1", "Ov2"} {
		received := now.Add(-time.Duration(i+1) * time.Minute)
		p := params(order(code, 900+i, ordersync.StatusPending, "n"), sq[i], ev("ov-"+code, code, received))
		p.FetchedAt = received.Add(time.Duration(i+1) * time.Second)
		apply(t, s, p)
	}
	old := ev("ov-old", "", now.Add(-time.Hour))
	old.Outcome = ordersync.OutcomeRejected
	if err := s.RecordEvents(ctx, []ordersync.EventRecord{old}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordOrderRef(ctx, ordersync.OrderRef{Account: account, Code: "OvWait"}); err != nil {
		t.Fatal(err)
	}
	for i, r := range []ordersync.DeadLetterReason{ordersync.ReasonMalformed, ordersync.ReasonUnknownOrder, ordersync.ReasonMalformed} {
		if _, err := s.AddDeadLetter(ctx, ordersync.DeadLetter{MsgID: fmt.Sprint("ov-dl-", i), Account: account, Reason: r,
			Attempts: 1, Body: []byte(`{}`), CreatedAt: now.Add(-time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Overview(ctx, ordersync.OverviewParams{Account: account, Now: now})
	if err != nil {
		t.Fatalf("Overview: %v", err)
	}
	if got.Webhooks != 2 || got.Mirrored != 2 {
		t.Errorf("webhooks %d, mirrored %d; want 2 and 2", got.Webhooks, got.Mirrored)
	}
	if want := (ordersync.SyncLag{Samples: 2, Median: time.Second, Max: 2 * time.Second}); got.Lag != want {
		t.Errorf("lag %+v, want %+v", got.Lag, want)
	}
	if got.Waiting != 1 || got.OldestWaiting.IsZero() {
		t.Errorf("waiting %d since %v; want OvWait", got.Waiting, got.OldestWaiting)
	}
	backlog, err := s.CheckBacklog(ctx, account, now)
	if err != nil || got.Checks != backlog {
		t.Errorf("checks %+v, CheckBacklog %+v (%v)", got.Checks, backlog, err)
	}
	msgs := pending(t, s)
	if got.Unsent != len(msgs) || len(msgs) == 0 || got.OldestUnsent == nil || got.OldestUnsent.ID != msgs[0].ID ||
		got.OldestUnsent.OrderCode != msgs[0].OrderCode || !got.OldestUnsent.CreatedAt.Equal(msgs[0].CreatedAt) {
		t.Errorf("unsent %d, oldest %+v; PendingOutbox %d, first %+v", got.Unsent, got.OldestUnsent, len(msgs), msgs[0])
	}
	if fmt.Sprint(got.DeadLetters) != "[{unknown_order 1} {malformed 2}]" {
		t.Errorf("dead letters %v", got.DeadLetters)
	}
	if len(got.Endpoints) != 0 {
		t.Errorf("endpoints %+v in a store without any", got.Endpoints)
	}
}
