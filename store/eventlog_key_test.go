package store

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// migrationVersion is the version of the migration whose file name holds
// name: the lead renumbers migrations at merge, so tests find them by name.
func migrationVersion(t *testing.T, db *DB, name string) int64 {
	t.Helper()
	provider, unlock, err := db.migrations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	for _, src := range provider.ListSources() {
		if strings.Contains(src.Path, name) {
			return src.Version
		}
	}
	t.Fatalf("no migration named %q", name)
	return 0
}

// TestMigrationEventLogAppends: events logged under the message id's key
// stay readable after the event log is keyed by receipt, and a redelivery
// of one of them (its receipt time unchanged) updates its row instead of
// adding one; the way back keeps them too.
func TestMigrationEventLogAppends(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		version := migrationVersion(t, db, "event_log_appends")
		provider, unlock, err := db.migrations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := provider.DownTo(ctx, version-1); err != nil {
			unlock()
			t.Fatalf("migrate down to %d: %v", version-1, err)
		}
		unlock()
		at := time.Date(2026, 11, 27, 16, 0, 0, 123456000, time.UTC)
		for i, id := range []string{"old-1", "old-2"} {
			if _, err := db.write.ExecContext(ctx, db.rebind(`INSERT INTO event_log (msg_id, account, received_at, type, order_id, order_code, outcome)
VALUES (?, ?, ?, 'Created', '7', 'c7', 'synced')`), id, ordersync.DefaultAccount, dbTime(at.Add(time.Duration(i)*time.Second))); err != nil {
				t.Fatalf("log %s the old way: %v", id, err)
			}
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("migrate up: %v", err)
		}
		list := func() []ordersync.EventRecord {
			t.Helper()
			evs, err := db.ListEvents(ctx, ordersync.EventFilter{Account: ordersync.DefaultAccount, OrderID: "7"})
			if err != nil {
				t.Fatal(err)
			}
			return evs
		}
		if evs := list(); len(evs) != 2 || evs[0].MsgID != "old-2" || evs[1].MsgID != "old-1" || !evs[1].ReceivedAt.Equal(at) {
			t.Fatalf("events after the migration = %+v, want old-2 then old-1 received at %v", evs, at)
		}
		// A redelivery of old-1: the same receipt time, another outcome.
		if err := db.RecordEvents(ctx, []ordersync.EventRecord{{MsgID: "old-1", Account: ordersync.DefaultAccount, ReceivedAt: at,
			Outcome: ordersync.OutcomeAlreadyFetched}}); err != nil {
			t.Fatalf("RecordEvents: %v", err)
		}
		evs := list()
		if len(evs) != 2 || evs[1].MsgID != "old-1" || evs[1].Outcome != ordersync.OutcomeAlreadyFetched || evs[1].Type != "Created" {
			t.Fatalf("events after old-1's redelivery = %+v, want two, old-1 already_fetched and still Created", evs)
		}
		if byCode, err := db.ListEvents(ctx, ordersync.EventFilter{Account: ordersync.DefaultAccount, OrderCode: "c7"}); err != nil || len(byCode) != 2 {
			t.Fatalf("the order's events = %+v, %v; want two", byCode, err)
		}

		// old-2's body received again later: a receipt of its own, which
		// the way back, keyed by message id, folds into one row.
		if err := db.RecordEvents(ctx, []ordersync.EventRecord{{MsgID: "old-2", Account: ordersync.DefaultAccount, ReceivedAt: at.Add(time.Hour),
			Outcome: ordersync.OutcomeIgnored}}); err != nil {
			t.Fatalf("RecordEvents: %v", err)
		}
		provider, unlock, err = db.migrations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := provider.DownTo(ctx, version-1); err != nil {
			unlock()
			t.Fatalf("migrate down again: %v", err)
		}
		unlock()
		var n, old2 int
		if err := db.read.GetContext(ctx, &n, `SELECT COUNT(*) FROM event_log WHERE outcome = 'already_fetched' OR msg_id = 'old-2'`); err != nil || n != 2 {
			t.Fatalf("after the way back: %d rows, %v; want both events", n, err)
		}
		if err := db.read.GetContext(ctx, &old2, `SELECT COUNT(*) FROM event_log WHERE msg_id = 'old-2' AND outcome = 'ignored'`); err != nil || old2 != 1 {
			t.Fatalf("after the way back: old-2's latest receipt in %d rows, %v; want 1", old2, err)
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("migrate up again: %v", err)
		}
	})
}

// TestRedeliveryKeepsItsEventLogRow: the pool logs a redelivered event
// (its ack was lost) at the receipt time it was logged at first, and the
// log keeps one row for it, with the later outcome, however many events
// were logged meanwhile.
func TestRedeliveryKeepsItsEventLogRow(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		at := time.Now().Add(-time.Minute)
		p := fetched(orderDoc(t, "r1", 301, ordersync.StatusPending), 1)
		p.Events = []ordersync.EventRecord{{MsgID: "hook-1", Account: ordersync.DefaultAccount, ReceivedAt: at, Type: ordersync.EventCreated,
			OrderID: "301", Signature: ordersync.SignatureValid, Outcome: ordersync.OutcomeSynced}}
		apply(t, db, p)
		for i := range 3 {
			if err := db.RecordEvents(ctx, []ordersync.EventRecord{{MsgID: "other-" + string(rune('a'+i)), Account: ordersync.DefaultAccount,
				ReceivedAt: at.Add(time.Duration(i+1) * time.Second), Outcome: ordersync.OutcomeIgnored}}); err != nil {
				t.Fatal(err)
			}
		}
		// The pool answers the redelivery from the mirror and logs it so.
		if err := db.RecordEvents(ctx, []ordersync.EventRecord{{MsgID: "hook-1", Account: ordersync.DefaultAccount, ReceivedAt: at,
			Outcome: ordersync.OutcomeAlreadyFetched, OrderCode: "r1"}}); err != nil {
			t.Fatal(err)
		}
		evs, err := db.ListEvents(ctx, ordersync.EventFilter{Account: ordersync.DefaultAccount, OrderCode: "r1"})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 || evs[0].MsgID != "hook-1" || evs[0].Outcome != ordersync.OutcomeAlreadyFetched || evs[0].Type != ordersync.EventCreated {
			t.Fatalf("the order's events = %+v, want hook-1 once, already_fetched, its type kept", evs)
		}
	})
}

// TestLoggedMsgIDs: one read of the log says which of the ids it holds,
// unknown ids and an empty list included.
func TestLoggedMsgIDs(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		at := time.Now().Add(-time.Minute)
		for i, id := range []string{"in-a", "in-b", "in-c"} {
			if err := db.RecordEvents(ctx, []ordersync.EventRecord{{MsgID: id, Account: ordersync.DefaultAccount,
				ReceivedAt: at.Add(time.Duration(i) * time.Second), Outcome: ordersync.OutcomeIgnored}}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := db.LoggedMsgIDs(ctx, []string{"in-a", "in-c", "never"})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]bool{"in-a": true, "in-c": true, "never": false}; !maps.Equal(got, want) {
			t.Errorf("LoggedMsgIDs = %v, want %v", got, want)
		}
		if got, err := db.LoggedMsgIDs(ctx, nil); err != nil || len(got) != 0 {
			t.Errorf("LoggedMsgIDs(nil) = %v, %v; want empty", got, err)
		}
	})
}
