package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// testAuditLog: the trail refuses a record that lacks what
// ValidateAuditRecord asks, lists newest first, filters by actor in any
// case, by action and by time, and pages with Before and Next.
func testAuditLog(t *testing.T, s Store) {
	ctx := context.Background()
	if err := s.RecordAudit(ctx, ordersync.AuditRecord{Actor: "ana", Action: "dlq.replay", Via: ordersync.ViaAPI}); err == nil {
		t.Error("a record without an outcome was kept")
	}
	base := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	recs := []ordersync.AuditRecord{
		{At: base, Actor: "Ana", Role: ordersync.RoleOperator, Via: ordersync.ViaAPI, Action: "dlq.replay", Object: "7", Outcome: ordersync.OutcomeOK},
		{At: base.Add(time.Minute), Actor: "bo", Role: ordersync.RoleViewer, Via: ordersync.ViaConsole, Action: "orders.export", Outcome: "403"},
		{At: base.Add(2 * time.Minute), Actor: "ana", Role: ordersync.RoleOperator, Via: ordersync.ViaCLI, Action: "endpoints.create", Object: "crm", Outcome: ordersync.OutcomeOK},
	}
	for _, r := range recs {
		if err := s.RecordAudit(ctx, r); err != nil {
			t.Fatalf("RecordAudit(%s): %v", r.Action, err)
		}
	}
	page, err := s.ListAudit(ctx, ordersync.AuditFilter{})
	if err != nil || len(page.Records) != 3 || page.Next != 0 {
		t.Fatalf("ListAudit = %+v, %v; want 3 records, no next page", page, err)
	}
	got := page.Records[2]
	if got.ID == 0 || !got.At.Equal(base) || got.Actor != "Ana" || got.Role != ordersync.RoleOperator || got.Via != ordersync.ViaAPI ||
		got.Action != "dlq.replay" || got.Object != "7" || got.Outcome != ordersync.OutcomeOK {
		t.Errorf("the oldest record read back as %+v, want %+v", got, recs[0])
	}
	if page.Records[0].Action != "endpoints.create" || page.Records[0].ID <= page.Records[1].ID {
		t.Errorf("not newest first: %+v", page.Records)
	}

	for _, c := range []struct {
		name   string
		filter ordersync.AuditFilter
		want   []string // actions, newest first
	}{
		{"actor in any case", ordersync.AuditFilter{Actor: "ANA"}, []string{"endpoints.create", "dlq.replay"}},
		{"action", ordersync.AuditFilter{Action: "orders.export"}, []string{"orders.export"}},
		{"since, inclusive", ordersync.AuditFilter{Since: base.Add(time.Minute)}, []string{"endpoints.create", "orders.export"}},
		{"until, exclusive", ordersync.AuditFilter{Until: base.Add(2 * time.Minute)}, []string{"orders.export", "dlq.replay"}},
		{"before an id", ordersync.AuditFilter{Before: page.Records[0].ID}, []string{"orders.export", "dlq.replay"}},
	} {
		p, err := s.ListAudit(ctx, c.filter)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []string
		for _, r := range p.Records {
			got = append(got, r.Action)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}

	first, err := s.ListAudit(ctx, ordersync.AuditFilter{Limit: 2})
	if err != nil || len(first.Records) != 2 || first.Next != first.Records[1].ID {
		t.Fatalf("first page of 2: %+v, %v; want 2 records and Next the last one's id", first, err)
	}
	second, err := s.ListAudit(ctx, ordersync.AuditFilter{Limit: 2, Before: first.Next})
	if err != nil || len(second.Records) != 1 || second.Next != 0 || second.Records[0].Action != "dlq.replay" {
		t.Errorf("second page: %+v, %v; want the oldest record and no next page", second, err)
	}
}

// testConsoleSessions: a session is found until it expires and not after it
// is deleted; an unknown id is ErrNotFound.
func testConsoleSessions(t *testing.T, s Store) {
	ctx := context.Background()
	created := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	cs := ordersync.ConsoleSession{ID: "hash-1", TokenIdentity: "tok-ana", TokenName: "ana", CreatedAt: created, ExpiresAt: created.Add(time.Hour)}
	if err := s.CreateConsoleSession(ctx, ordersync.ConsoleSession{ID: "hash-0"}); err == nil {
		t.Error("a session without a token identity was kept")
	}
	if err := s.CreateConsoleSession(ctx, cs); err != nil {
		t.Fatalf("CreateConsoleSession: %v", err)
	}
	got, err := s.FindConsoleSession(ctx, "hash-1", created.Add(59*time.Minute))
	if err != nil || got.TokenIdentity != cs.TokenIdentity || got.TokenName != cs.TokenName ||
		!got.CreatedAt.Equal(cs.CreatedAt) || !got.ExpiresAt.Equal(cs.ExpiresAt) {
		t.Errorf("FindConsoleSession before it expires = %+v, %v; want %+v", got, err, cs)
	}
	if _, err := s.FindConsoleSession(ctx, "hash-1", cs.ExpiresAt); !errors.Is(err, ordersync.ErrNotFound) {
		t.Errorf("FindConsoleSession when it expires: %v, want ErrNotFound", err)
	}
	if _, err := s.FindConsoleSession(ctx, "hash-9", created); !errors.Is(err, ordersync.ErrNotFound) {
		t.Errorf("FindConsoleSession of an unknown id: %v, want ErrNotFound", err)
	}
	if err := s.DeleteConsoleSession(ctx, "hash-1"); err != nil {
		t.Fatalf("DeleteConsoleSession: %v", err)
	}
	if _, err := s.FindConsoleSession(ctx, "hash-1", created); !errors.Is(err, ordersync.ErrNotFound) {
		t.Errorf("FindConsoleSession after delete: %v, want ErrNotFound", err)
	}
	if err := s.DeleteConsoleSession(ctx, "hash-1"); err != nil {
		t.Errorf("deleting a session twice: %v", err)
	}
}
