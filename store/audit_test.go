package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestAuditTrail: records come back newest first, filtered by actor,
// action and time, in keyset pages that neither skip nor repeat while
// records are added; the pruner removes those past the cut-off.
func TestAuditTrail(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		record := func(i int, actor, action string) {
			t.Helper()
			rec := ordersync.AuditRecord{At: testNow.Add(time.Duration(i) * time.Minute), Actor: actor, Role: ordersync.RoleOperator,
				Via: ordersync.ViaAPI, Action: action, Object: fmt.Sprintf("dead-letter %d", i), Outcome: ordersync.OutcomeOK}
			if err := db.RecordAudit(ctx, rec); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 10 {
			actor, action := "ops", "dead-letter.replay"
			if i%2 == 1 {
				actor, action = "alice", "endpoint.delete"
			}
			record(i, actor, action)
		}
		if err := db.RecordAudit(ctx, ordersync.AuditRecord{Actor: "x", Via: ordersync.ViaAPI, Action: "a"}); err == nil {
			t.Error("a record without an outcome was kept")
		}

		all, err := db.ListAudit(ctx, ordersync.AuditFilter{})
		if err != nil || len(all.Records) != 10 || all.Next != 0 {
			t.Fatalf("ListAudit = %d records, next %d, %v; want 10, 0", len(all.Records), all.Next, err)
		}
		first := all.Records[0]
		if first.Object != "dead-letter 9" || first.Actor != "alice" || first.Via != ordersync.ViaAPI || first.Role != ordersync.RoleOperator ||
			!first.At.Equal(testNow.Add(9*time.Minute)) || first.At.Location() != time.UTC {
			t.Errorf("newest record %+v", first)
		}

		// Pages of 3 by alice: 9, 7, 5 | 3, 1; a record added between
		// the pages does not shift the second.
		p1, err := db.ListAudit(ctx, ordersync.AuditFilter{Actor: "alice", Limit: 3})
		if err != nil || len(p1.Records) != 3 || p1.Next == 0 {
			t.Fatalf("page 1 = %+v, %v", p1, err)
		}
		record(20, "alice", "endpoint.delete")
		p2, err := db.ListAudit(ctx, ordersync.AuditFilter{Actor: "ALICE", Limit: 3, Before: p1.Next}) // any case
		if err != nil || len(p2.Records) != 2 || p2.Next != 0 {
			t.Fatalf("page 2 = %+v, %v", p2, err)
		}
		var objects []string
		for _, r := range append(p1.Records, p2.Records...) {
			objects = append(objects, r.Object)
		}
		if fmt.Sprint(objects) != "[dead-letter 9 dead-letter 7 dead-letter 5 dead-letter 3 dead-letter 1]" {
			t.Errorf("alice's pages: %v", objects)
		}

		byAction, err := db.ListAudit(ctx, ordersync.AuditFilter{Action: "Dead-Letter.Replay", Since: testNow.Add(2 * time.Minute), Until: testNow.Add(6 * time.Minute)})
		if err != nil || len(byAction.Records) != 2 || byAction.Records[0].Object != "dead-letter 4" || byAction.Records[1].Object != "dead-letter 2" {
			t.Errorf("replays in [2m, 6m) = %+v, %v; want 4 and 2", byAction.Records, err)
		}

		if n, err := db.PruneAuditLog(ctx, testNow.Add(5*time.Minute), 3); err != nil || n != 3 {
			t.Fatalf("PruneAuditLog(limit 3) = %d, %v", n, err)
		}
		if n, err := db.PruneAuditLog(ctx, testNow.Add(5*time.Minute), 100); err != nil || n != 2 {
			t.Fatalf("PruneAuditLog = %d, %v; want the 2 left before 5m", n, err)
		}
		left, err := db.ListAudit(ctx, ordersync.AuditFilter{})
		if err != nil || len(left.Records) != 6 || left.Records[5].Object != "dead-letter 5" {
			t.Errorf("after pruning: %+v, %v; want 6, the oldest dead-letter 5", left.Records, err)
		}
	})
}

// TestConsoleSessions: a session is found until it expires or is deleted,
// outlives the connection that made it, and the pruner removes the
// expired.
func TestConsoleSessions(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		s := ordersync.ConsoleSession{ID: "h1", TokenIdentity: "ti", TokenName: "ops", CreatedAt: testNow, ExpiresAt: testNow.Add(time.Hour)}
		if err := db.CreateConsoleSession(ctx, s); err != nil {
			t.Fatal(err)
		}
		if err := db.CreateConsoleSession(ctx, s); !errors.Is(err, ordersync.ErrConflict) {
			t.Errorf("the same session twice: %v, want ErrConflict", err)
		}
		old := s
		old.ID, old.ExpiresAt = "h0", testNow.Add(-time.Minute)
		if err := db.CreateConsoleSession(ctx, old); err != nil {
			t.Fatal(err)
		}

		// A restart: the same database opened again.
		again := openDB(t, url)
		got, err := again.FindConsoleSession(ctx, "h1", testNow)
		if err != nil || got.TokenName != "ops" || got.TokenIdentity != "ti" || !got.ExpiresAt.Equal(s.ExpiresAt) {
			t.Fatalf("FindConsoleSession after reopening = %+v, %v", got, err)
		}
		if _, err := again.FindConsoleSession(ctx, "h1", testNow.Add(time.Hour)); !errors.Is(err, ordersync.ErrNotFound) {
			t.Errorf("an expired session: %v, want ErrNotFound", err)
		}
		if n, err := again.PruneConsoleSessions(ctx, testNow, 100); err != nil || n != 1 {
			t.Errorf("PruneConsoleSessions = %d, %v; want the 1 expired", n, err)
		}
		if err := again.DeleteConsoleSession(ctx, "h1"); err != nil {
			t.Fatal(err)
		}
		if _, err := again.FindConsoleSession(ctx, "h1", testNow); !errors.Is(err, ordersync.ErrNotFound) {
			t.Errorf("a deleted session: %v, want ErrNotFound", err)
		}
		if err := again.DeleteConsoleSession(ctx, "h1"); err != nil {
			t.Errorf("deleting it again: %v", err)
		}
	})
}
