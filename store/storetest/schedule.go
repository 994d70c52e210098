package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// testCheckSchedule: an order that can change is on the schedule, a claim
// moves it to retryAt, a final one leaves it, DeferCheck moves it.
func testCheckSchedule(t *testing.T, s Store) {
	ctx := context.Background()
	n := seqs(t, s, 2)
	apply(t, s, params(order("Due01", 51, ordersync.StatusPending, "x"), n[0]), params(order("Due02", 52, ordersync.StatusCancelled, "x"), n[1]))
	later := time.Now().Add(24 * time.Hour)
	backlog, err := s.CheckBacklog(ctx, account, later)
	if err != nil || backlog.Due != 1 || backlog.Oldest.IsZero() || backlog.Oldest.After(later) {
		t.Fatalf("CheckBacklog = %+v, %v; want one due", backlog, err)
	}
	retryAt := later.Add(time.Hour)
	due, err := s.ClaimDueChecks(ctx, account, later, 10, retryAt)
	if err != nil || len(due) != 1 || due[0].Code != "Due01" || due[0].ID != "51" {
		t.Fatalf("ClaimDueChecks = %+v, %v; want Due01 alone (Due02 is final)", due, err)
	}
	if again, _ := s.ClaimDueChecks(ctx, account, later, 10, retryAt); len(again) != 0 {
		t.Errorf("claimed twice: %+v", again)
	}
	if b, _ := s.CheckBacklog(ctx, account, retryAt); b.Due != 1 {
		t.Errorf("a claimed check is not due again at retryAt: %+v", b)
	}
	if err := s.DeferCheck(ctx, account, "Due01", retryAt.Add(time.Hour)); err != nil {
		t.Fatalf("DeferCheck: %v", err)
	}
	if b, _ := s.CheckBacklog(ctx, account, retryAt); b.Due != 0 || !b.Oldest.IsZero() || !b.Next.Equal(retryAt.Add(time.Hour).Truncate(time.Microsecond)) {
		t.Errorf("deferred check still due at retryAt, or not next at its new time: %+v", b)
	}
	if err := s.DeferCheck(ctx, account, "Due02", time.Now()); err != nil {
		t.Fatalf("DeferCheck of a final order: %v", err)
	}
	if b, _ := s.CheckBacklog(ctx, account, later.Add(48*time.Hour)); b.Due != 1 {
		t.Errorf("a final order came on the schedule: %+v", b)
	}
	if _, err := s.ClaimDueChecks(ctx, account, later, 0, retryAt); err == nil {
		t.Error("ClaimDueChecks with limit 0 succeeded")
	}
}
