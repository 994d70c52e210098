package storetest

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// testFetchSeqGrows: numbers are consecutive within a reservation and grow
// across them; the current value is the last handed out.
func testFetchSeqGrows(t *testing.T, s Store) {
	ctx := context.Background()
	if _, err := s.AllocateFetchSeq(ctx, 0); err == nil {
		t.Error("AllocateFetchSeq(0) succeeded")
	}
	var last int64
	for _, n := range []int{1, 3, 1, 5} {
		first, err := s.AllocateFetchSeq(ctx, n)
		if err != nil {
			t.Fatalf("AllocateFetchSeq(%d): %v", n, err)
		}
		if first <= last {
			t.Fatalf("AllocateFetchSeq(%d) = %d, not above %d", n, first, last)
		}
		last = first + int64(n) - 1
		cur, err := s.CurrentFetchSeq(ctx)
		if err != nil || cur != last {
			t.Fatalf("CurrentFetchSeq = %d, %v; want %d", cur, err, last)
		}
	}
}

// testEarlierFetchNeverOverwritesLater: a fetch that started earlier (a
// lower sequence) and is applied later changes nothing but the event log,
// in separate calls and within one batch.
func testEarlierFetchNeverOverwritesLater(t *testing.T, s Store) {
	ctx := context.Background()
	n := seqs(t, s, 4)
	apply(t, s, params(order("Later01", 1, ordersync.StatusPaid, "x"), n[1]))
	res := apply(t, s, params(order("Later01", 1, ordersync.StatusPending, "x"), n[0], ordersync.EventRecord{MsgID: "late-1", Type: "Created"}))
	if res[0].Applied || res[0].Status != ordersync.StatusPaid {
		t.Errorf("earlier fetch applied last: %+v, want not applied, status PAID", res[0])
	}
	if m := find(t, s, "Later01"); m.Order.OrderStatus != ordersync.StatusPaid || m.Sync.FetchSeq != n[1] {
		t.Errorf("mirror holds %s at seq %d, want PAID at %d", m.Order.OrderStatus, m.Sync.FetchSeq, n[1])
	}
	evs, err := s.ListEvents(ctx, ordersync.EventFilter{MsgID: "late-1"})
	if err != nil || len(evs) != 1 || evs[0].Outcome != ordersync.OutcomeSynced || evs[0].OrderCode != "Later01" {
		t.Errorf("a stale fetch's event: %+v, %v; want one row, synced, of Later01", evs, err)
	}

	res = apply(t, s,
		params(order("Later02", 2, ordersync.StatusPaid, "x"), n[3]),
		params(order("Later02", 2, ordersync.StatusPending, "x"), n[2]))
	if !res[0].Applied || res[1].Applied {
		t.Errorf("one batch, newer then older: applied %v, %v; want true, false", res[0].Applied, res[1].Applied)
	}
	if m := find(t, s, "Later02"); m.Order.OrderStatus != ordersync.StatusPaid || m.Sync.FetchSeq != n[3] {
		t.Errorf("mirror holds %s at seq %d, want PAID at %d", m.Order.OrderStatus, m.Sync.FetchSeq, n[3])
	}
	// The same sequence twice is not newer either.
	if res := apply(t, s, params(order("Later02", 2, ordersync.StatusFinalized, "x"), n[3])); res[0].Applied {
		t.Errorf("a repeated sequence applied: %+v", res[0])
	}
}

// testApplyResults: what an apply reports, and what an unchanged document
// still updates.
func testApplyResults(t *testing.T, s Store) {
	n := seqs(t, s, 3)
	if _, err := s.ApplyOrders(context.Background(), []ordersync.ApplyParams{params(order("Res01", 1, ordersync.StatusPending, "x"), 0)}); err == nil {
		t.Error("ApplyOrders with Seq 0 succeeded")
	}
	// NextCheck has a case of its own (ApplyReportsNextCheck).
	r := withoutNextCheck(apply(t, s, params(order("Res01", 1, ordersync.StatusPending, "x"), n[0]))[0])
	if want := (ordersync.ApplyResult{Applied: true, Created: true, Changed: true, Status: ordersync.StatusPending}); !sameResult(r, want) {
		t.Errorf("first apply: %+v, want %+v", r, want)
	}
	r = withoutNextCheck(apply(t, s, params(order("Res01", 1, ordersync.StatusPending, "x"), n[1]))[0])
	if want := (ordersync.ApplyResult{Applied: true, From: ordersync.StatusPending, Status: ordersync.StatusPending}); !sameResult(r, want) {
		t.Errorf("same document again: %+v, want %+v", r, want)
	}
	if m := find(t, s, "Res01"); m.Sync.FetchCount != 2 || m.Sync.FetchSeq != n[1] || m.Sync.LastSyncedAt == nil {
		t.Errorf("sync after an unchanged fetch: %+v, want 2 fetches at seq %d", m.Sync, n[1])
	}
	// The apply's trace goes with the messages it queues, to the relay.
	traced := params(order("Res01", 1, ordersync.StatusCancelled, "x"), n[2])
	traced.TraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	r = apply(t, s, traced)[0]
	msgs := r.Messages
	if want := (ordersync.ApplyResult{Applied: true, Changed: true, From: ordersync.StatusPending, Status: ordersync.StatusCancelled}); !sameResult(withoutNextCheck(r), want) {
		t.Errorf("status change: %+v, want %+v", r, want)
	}
	// The messages it queued come back as committed, for the relay to
	// publish without reading them back: as PendingOutbox would give them.
	pending, err := s.PendingOutbox(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || len(pending) == 0 {
		t.Fatalf("status change reported %d messages, %d pending; want 1 reported", len(msgs), len(pending))
	}
	m, last := msgs[0], pending[len(pending)-1]
	if m.ID != last.ID || m.MsgID != last.MsgID || m.Subject != last.Subject || m.Account != last.Account || m.OrderCode != last.OrderCode ||
		m.From != last.From || !bytes.Equal(m.Payload, last.Payload) || !m.CreatedAt.Equal(last.CreatedAt) || m.TraceParent != traced.TraceParent || last.TraceParent != traced.TraceParent {
		t.Errorf("status change reported message %+v, want the pending %+v", m, last)
	}
	if m.To != ordersync.StatusCancelled || m.StatusChangeAt <= 0 || m.StatusChangeAt >= len(m.Payload) {
		t.Errorf("status change reported status %q and statusChange at %d of %d bytes, want CANCELLED and an offset within", m.To, m.StatusChangeAt, len(m.Payload))
	}
}

// withoutNextCheck is r with NextCheck cleared, for comparing the rest.
func withoutNextCheck(r ordersync.ApplyResult) ordersync.ApplyResult {
	r.NextCheck = time.Time{}
	return r
}

// sameResult compares what two applies report but their messages, which
// have cases of their own.
func sameResult(a, b ordersync.ApplyResult) bool {
	a.Messages, b.Messages = nil, nil
	return reflect.DeepEqual(a, b)
}

// testApplyReportsNextCheck: an apply reports the next check it set, the
// one the schedule holds; none for a final status, and none for a stale
// apply, which leaves the schedule as it was.
func testApplyReportsNextCheck(t *testing.T, s Store) {
	ctx := context.Background()
	n := seqs(t, s, 4)
	p := params(order("Next01", 61, ordersync.StatusPending, "x"), n[1])
	r := apply(t, s, p)[0]
	if r.NextCheck.IsZero() || !r.NextCheck.After(p.FetchedAt) {
		t.Fatalf("an open order's apply reported next check %v, want one after its fetch at %v", r.NextCheck, p.FetchedAt)
	}
	if want, ok := ordersync.NextCheck(ordersync.CheckState{Code: "Next01", Status: ordersync.StatusPending, ActiveAt: p.FetchedAt}, p.FetchedAt); !ok || r.NextCheck.Sub(want).Abs() > time.Second {
		t.Errorf("reported next check %v, want about %v (ordersync.NextCheck)", r.NextCheck, want)
	}
	b, err := s.CheckBacklog(ctx, account, p.FetchedAt)
	if err != nil || !b.Next.Equal(r.NextCheck) {
		t.Errorf("the schedule's next check is %v (%v), the apply reported %v", b.Next, err, r.NextCheck)
	}
	if r := apply(t, s, params(order("Next01", 61, ordersync.StatusPaid, "x"), n[0]))[0]; r.Applied || !r.NextCheck.IsZero() {
		t.Errorf("a stale apply: %+v, want not applied and no next check", r)
	}
	if r := apply(t, s, params(order("Next01", 61, ordersync.StatusCancelled, "x"), n[2]))[0]; !r.Applied || !r.NextCheck.IsZero() {
		t.Errorf("a final status: %+v, want applied and no next check", r)
	}
	if b, err := s.CheckBacklog(ctx, account, p.FetchedAt); err != nil || !b.Next.IsZero() {
		t.Errorf("a final order still on the schedule: %+v, %v", b, err)
	}
}

// testResolveOrderCodes: keys recorded before a fetch resolve to the code;
// unknown keys are ErrNotFound; a recorded order is not found until fetched.
func testResolveOrderCodes(t *testing.T, s Store) {
	ctx := context.Background()
	if err := s.RecordOrderRef(ctx, ordersync.OrderRef{Account: account, Code: "Ref01", ID: "31", Reference: "r-31"}); err != nil {
		t.Fatalf("RecordOrderRef: %v", err)
	}
	for _, ref := range []ordersync.OrderRef{{Account: account, ID: "31"}, {Account: account, Reference: "r-31"}, {Account: account, Code: "Ref01"}} {
		if code, err := s.ResolveOrderCode(ctx, ref); err != nil || code != "Ref01" {
			t.Errorf("ResolveOrderCode(%+v) = %q, %v; want Ref01", ref, code, err)
		}
	}
	for _, ref := range []ordersync.OrderRef{{Account: account, ID: "99"}, {Account: "other", ID: "31"}, {Account: account, ID: "32", Reference: "r-31"}, {Account: account}} {
		if _, err := s.ResolveOrderCode(ctx, ref); !errors.Is(err, ordersync.ErrNotFound) {
			t.Errorf("ResolveOrderCode(%+v): %v, want ErrNotFound", ref, err)
		}
	}
	codes, err := s.ResolveOrderCodes(ctx, account, []ordersync.ID{"31", "99"})
	if err != nil || len(codes) != 1 || codes["31"] != "Ref01" {
		t.Errorf("ResolveOrderCodes = %v, %v; want only 31 → Ref01", codes, err)
	}
	if _, err := s.FindOrderByCode(ctx, account, "Ref01"); !errors.Is(err, ordersync.ErrNotFound) {
		t.Errorf("FindOrderByCode of an order never fetched: %v, want ErrNotFound", err)
	}
	n := seqs(t, s, 1)
	apply(t, s, params(order("Ref01", 31, ordersync.StatusPending, "fetched"), n[0]))
	if err := s.RecordOrderRef(ctx, ordersync.OrderRef{Account: account, Code: "Ref01", ID: "31"}); err != nil {
		t.Fatalf("RecordOrderRef after the fetch: %v", err)
	}
	if m := find(t, s, "Ref01"); m.Order.Name != "fetched" || m.Sync.FetchSeq != n[0] {
		t.Errorf("RecordOrderRef overwrote the fetched order: %+v", m)
	}
}

// testLastFetch: the last applied fetch's time is its FetchedAt, and the
// last status change's time and cause are those of the fetch that saw it;
// an earlier fetch applied late changes neither. One read serves many
// orders, and leaves out those never fetched.
func testLastFetch(t *testing.T, s Store) {
	ctx := context.Background()
	if got, err := s.LastFetches(ctx, account, []string{"Last01"}); err != nil || len(got) != 0 {
		t.Fatalf("LastFetches of an unknown order = %v, %v; want none", got, err)
	}
	sq := seqs(t, s, 4)
	base := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	created := params(order("Last01", 7001, ordersync.StatusPending, "Last"), sq[0])
	created.FetchedAt = base
	paid := params(order("Last01", 7001, ordersync.StatusPaid, "Last"), sq[2])
	paid.FetchedAt, paid.Cause = base.Add(time.Minute), ordersync.CauseReconcile
	stale := params(order("Last01", 7001, ordersync.StatusPending, "Last"), sq[1])
	stale.FetchedAt = base.Add(2 * time.Minute)
	other := params(order("Last02", 7002, ordersync.StatusPending, "Last"), sq[3])
	other.FetchedAt = base.Add(3 * time.Minute)
	apply(t, s, created)
	apply(t, s, paid)
	apply(t, s, stale)
	apply(t, s, other)
	got, err := s.LastFetches(ctx, account, []string{"Last01", "Nope01", "Last02"})
	if err != nil || len(got) != 2 {
		t.Fatalf("LastFetches = %+v, %v; want Last01 and Last02 only", got, err)
	}
	for code, want := range map[string]ordersync.LastFetch{
		"Last01": {At: paid.FetchedAt, Status: ordersync.StatusPaid, ChangedAt: paid.FetchedAt, ChangeCause: ordersync.CauseReconcile},
		"Last02": {At: other.FetchedAt, Status: ordersync.StatusPending, ChangedAt: other.FetchedAt, ChangeCause: ordersync.CauseWebhook},
	} {
		lf := got[code]
		if !lf.At.Equal(want.At) || lf.Status != want.Status || !lf.ChangedAt.Equal(want.ChangedAt) || lf.ChangeCause != want.ChangeCause {
			t.Errorf("LastFetches[%s] = %+v; want %+v", code, lf, want)
		}
	}
}
