// Package storetest is the conformance suite of the root package's store
// interfaces: the behaviour the worker relies on from any mirror (the
// sequence guard, the outbox's exactly-once PAID trigger, dead letters, the
// reconciler's schedule, the logs). store.DB runs it on SQLite and
// PostgreSQL; fake.Store runs it in memory, which is what keeps the fake
// honest.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// Store is what the suite exercises: the interfaces the worker's stages
// write and read the mirror through.
type Store interface {
	ordersync.Mirror
	ordersync.OrderCodesResolver
	ordersync.FetchSeqReader
	ordersync.MirrorReader
	ordersync.DeadLetters
	ordersync.Outbox
	ordersync.CheckSchedule
	ordersync.DeliveryLog
	ordersync.OverviewReader
	ordersync.LastFetchReader
}

// Run runs every case of the suite, each against a fresh, empty store from
// open.
func Run(t *testing.T, open func(t *testing.T) Store) {
	t.Helper()
	for _, c := range []struct {
		name string
		test func(t *testing.T, s Store)
	}{
		{"FetchSeqGrows", testFetchSeqGrows},
		{"EarlierFetchNeverOverwritesLater", testEarlierFetchNeverOverwritesLater},
		{"ApplyResults", testApplyResults},
		{"ApplyReportsNextCheck", testApplyReportsNextCheck},
		{"OutboxPaidExactlyOnce", testOutboxPaidExactlyOnce},
		{"OutboxFinalizedFiresPaid", testOutboxFinalizedFiresPaid},
		{"ResolveOrderCodes", testResolveOrderCodes},
		{"EventLogUpserts", testEventLogUpserts},
		{"DeadLetters", testDeadLetters},
		{"CheckSchedule", testCheckSchedule},
		{"DeliveryLog", testDeliveryLog},
		{"Readers", testReaders},
		{"Overview", testOverview},
		{"OrderHistory", testOrderHistory},
		{"LastFetch", testLastFetch},
	} {
		t.Run(c.name, func(t *testing.T) { c.test(t, open(t)) })
	}
}

const account = ordersync.DefaultAccount

// order is an order detail built in code; name makes two documents of one
// status differ.
func order(code string, id int, status ordersync.Status, name string) *ordersync.Order {
	o := &ordersync.Order{
		OrderID: ordersync.ID(fmt.Sprint(id)), OrderCode: code, OrderReference: "ref-" + code, Name: name,
		OrderStatus: status, Subtotal: ordersync.MustAmount("10.50"), Total: ordersync.MustAmount("10.50"),
		Store:   ordersync.StoreInfo{Name: "Tienda", CountryCode: "SV", CurrencyCode: "USD", CurrencySymbol: "$"},
		Created: ordersync.Timestamp{Time: time.Date(2026, 10, 10, 18, 0, id%60, 0, time.UTC)},
	}
	if status.IsPaidState() {
		o.Payment = &ordersync.Payment{AuthorizationCode: "204981", Buyer: &ordersync.Buyer{Name: "Ana"}}
	}
	return o
}

func params(o *ordersync.Order, seq int64, events ...ordersync.EventRecord) ordersync.ApplyParams {
	return ordersync.ApplyParams{Account: account, Order: o, Seq: seq, FetchedAt: time.Now(), Cause: ordersync.CauseWebhook, Events: events}
}

func apply(t *testing.T, s Store, ps ...ordersync.ApplyParams) []ordersync.ApplyResult {
	t.Helper()
	res, err := s.ApplyOrders(context.Background(), ps)
	if err != nil {
		t.Fatalf("ApplyOrders: %v", err)
	}
	if len(res) != len(ps) {
		t.Fatalf("ApplyOrders: %d results for %d params", len(res), len(ps))
	}
	return res
}

func seqs(t *testing.T, s Store, n int) []int64 {
	t.Helper()
	first, err := s.AllocateFetchSeq(context.Background(), n)
	if err != nil {
		t.Fatalf("AllocateFetchSeq: %v", err)
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = first + int64(i)
	}
	return out
}

func find(t *testing.T, s Store, code string) *ordersync.MirroredOrder {
	t.Helper()
	m, err := s.FindOrderByCode(context.Background(), account, code)
	if err != nil {
		t.Fatalf("FindOrderByCode(%s): %v", code, err)
	}
	return m
}

func pending(t *testing.T, s Store) []ordersync.OutboxMessage {
	t.Helper()
	msgs, err := s.PendingOutbox(context.Background(), 1000)
	if err != nil {
		t.Fatalf("PendingOutbox: %v", err)
	}
	return msgs
}

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
	if want := (ordersync.ApplyResult{Applied: true, Created: true, Changed: true, Status: ordersync.StatusPending}); r != want {
		t.Errorf("first apply: %+v, want %+v", r, want)
	}
	r = withoutNextCheck(apply(t, s, params(order("Res01", 1, ordersync.StatusPending, "x"), n[1]))[0])
	if want := (ordersync.ApplyResult{Applied: true, From: ordersync.StatusPending, Status: ordersync.StatusPending}); r != want {
		t.Errorf("same document again: %+v, want %+v", r, want)
	}
	if m := find(t, s, "Res01"); m.Sync.FetchCount != 2 || m.Sync.FetchSeq != n[1] || m.Sync.LastSyncedAt == nil {
		t.Errorf("sync after an unchanged fetch: %+v, want 2 fetches at seq %d", m.Sync, n[1])
	}
	r = apply(t, s, params(order("Res01", 1, ordersync.StatusCancelled, "x"), n[2]))[0]
	if want := (ordersync.ApplyResult{Applied: true, Changed: true, From: ordersync.StatusPending, Status: ordersync.StatusCancelled}); r != want {
		t.Errorf("status change: %+v, want %+v", r, want)
	}
}

// withoutNextCheck is r with NextCheck cleared, for comparing the rest.
func withoutNextCheck(r ordersync.ApplyResult) ordersync.ApplyResult {
	r.NextCheck = time.Time{}
	return r
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

// testOutboxPaidExactlyOnce: each status change queues its message, the
// PAID trigger is queued once however often the order is seen paid, and a
// message marked sent is not pending again.
func testOutboxPaidExactlyOnce(t *testing.T, s Store) {
	ctx := context.Background()
	n := seqs(t, s, 5)
	steps := []struct {
		status ordersync.Status
		name   string
		paid   bool
	}{
		{ordersync.StatusPending, "a", false},
		{ordersync.StatusPaid, "a", true},
		{ordersync.StatusPaid, "b", false}, // a new document, still PAID
		{ordersync.StatusFinalized, "b", false},
		{ordersync.StatusFinalized, "b", false}, // unchanged
	}
	for i, st := range steps {
		if r := apply(t, s, params(order("Once01", 7, st.status, st.name), n[i]))[0]; r.Paid != st.paid {
			t.Errorf("step %d (%s): Paid %v, want %v", i, st.status, r.Paid, st.paid)
		}
	}
	msgs := pending(t, s)
	var got []string
	ids := map[string]bool{}
	for _, m := range msgs {
		got = append(got, m.Subject)
		if ids[m.MsgID] {
			t.Errorf("message id %s twice", m.MsgID)
		}
		ids[m.MsgID] = true
		// The payload is the order as mirrored (MirroredOrder's JSON).
		var payload struct {
			Account   string `json:"account"`
			OrderCode string `json:"orderCode"`
		}
		if err := json.Unmarshal(m.Payload, &payload); err != nil || payload.OrderCode != "Once01" || payload.Account != account {
			t.Errorf("payload of %s: %v, order %s/%s", m.MsgID, err, payload.Account, payload.OrderCode)
		}
	}
	want := []string{
		ordersync.SubjectStatusPrefix + "PENDING", ordersync.SubjectStatusPrefix + "PAID", ordersync.SubjectPaid,
		ordersync.SubjectStatusPrefix + "FINALIZED",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("outbox subjects %v, want %v (oldest first)", got, want)
	}
	if msgs[3].From != ordersync.StatusPaid || msgs[0].From != "" {
		t.Errorf("from statuses %q, %q; want \"\" and PAID", msgs[0].From, msgs[3].From)
	}
	if err := s.MarkOutboxSent(ctx, []int64{msgs[0].ID, msgs[1].ID}, time.Now()); err != nil {
		t.Fatalf("MarkOutboxSent: %v", err)
	}
	if err := s.MarkOutboxSent(ctx, []int64{msgs[0].ID, 1 << 40}, time.Now()); err != nil {
		t.Fatalf("MarkOutboxSent of sent and unknown ids: %v", err)
	}
	left := pending(t, s)
	if len(left) != 2 || left[0].ID != msgs[2].ID || left[1].ID != msgs[3].ID {
		t.Errorf("pending after marking two sent: %v, want the last two", left)
	}
}

// testOutboxFinalizedFiresPaid: an order first seen FINALIZED fires PAID.
func testOutboxFinalizedFiresPaid(t *testing.T, s Store) {
	n := seqs(t, s, 1)
	if r := apply(t, s, params(order("Fin01", 8, ordersync.StatusFinalized, "x"), n[0]))[0]; !r.Paid {
		t.Errorf("first seen FINALIZED: %+v, want Paid", r)
	}
	var subjects []string
	for _, m := range pending(t, s) {
		subjects = append(subjects, m.Subject)
	}
	if want := []string{ordersync.SubjectStatusPrefix + "FINALIZED", ordersync.SubjectPaid}; !slices.Equal(subjects, want) {
		t.Errorf("outbox %v, want %v", subjects, want)
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

// testEventLogUpserts: a MsgID is one row, taking the latest outcome.
func testEventLogUpserts(t *testing.T, s Store) {
	ctx := context.Background()
	ev := ordersync.EventRecord{MsgID: "ev-1", Account: account, ReceivedAt: time.Now(), Type: "Created", OrderID: "5", Outcome: ordersync.OutcomeIgnored}
	if err := s.RecordEvents(ctx, []ordersync.EventRecord{ev}); err != nil {
		t.Fatalf("RecordEvents: %v", err)
	}
	ev.Outcome, ev.Detail, ev.Type = ordersync.OutcomeRejected, "why", ""
	if err := s.RecordEvents(ctx, []ordersync.EventRecord{ev}); err != nil {
		t.Fatalf("RecordEvents again: %v", err)
	}
	evs, err := s.ListEvents(ctx, ordersync.EventFilter{Account: account, OrderID: "5"})
	if err != nil || len(evs) != 1 {
		t.Fatalf("ListEvents = %v, %v; want one row", evs, err)
	}
	if evs[0].Outcome != ordersync.OutcomeRejected || evs[0].Detail != "why" || evs[0].Type != "Created" {
		t.Errorf("upserted row %+v, want rejected, its detail, the type kept", evs[0])
	}
	if err := s.RecordEvents(ctx, []ordersync.EventRecord{{MsgID: "ev-2"}}); err == nil {
		t.Error("RecordEvents without an account succeeded")
	}
}

// testDeadLetters: letters are kept whole, found, listed newest first by
// filter, updated while not replayed, and marked replayed.
func testDeadLetters(t *testing.T, s Store) {
	ctx := context.Background()
	body := []byte(`{"orderId":"41","orderType":"FASTLINK_CHARGE","type":"SuccessPayment"}`)
	first, err := s.AddDeadLetter(ctx, ordersync.DeadLetter{MsgID: "dl-1", Account: account, Reason: ordersync.ReasonUnresolved, Attempts: 1, OrderID: "41", Body: body, Headers: map[string]string{"A": "b"}})
	if err != nil {
		t.Fatalf("AddDeadLetter: %v", err)
	}
	second, err := s.AddDeadLetter(ctx, ordersync.DeadLetter{MsgID: "dl-2", Account: account, Reason: ordersync.ReasonUnknownOrder, LastError: "404"})
	if err != nil {
		t.Fatalf("AddDeadLetter: %v", err)
	}
	again, err := s.AddDeadLetter(ctx, ordersync.DeadLetter{MsgID: "dl-1", Account: account, Reason: ordersync.ReasonUnresolved, Attempts: 3, OrderID: "41", Body: body})
	if err != nil || again != first {
		t.Errorf("the same MsgID again: id %d, %v; want %d (updated)", again, err, first)
	}
	dl, err := s.FindDeadLetter(ctx, first)
	if err != nil || dl.Attempts != 3 || string(dl.Body) != string(body) || dl.OrderID != "41" {
		t.Errorf("FindDeadLetter = %+v, %v", dl, err)
	}
	if _, err := s.FindDeadLetter(ctx, second+100); !errors.Is(err, ordersync.ErrNotFound) {
		t.Errorf("FindDeadLetter of an unknown id: %v, want ErrNotFound", err)
	}
	all, err := s.ListDeadLetters(ctx, ordersync.DeadLetterFilter{})
	if err != nil || len(all) != 2 || all[0].ID != second {
		t.Errorf("ListDeadLetters = %d letters, %v; want 2, newest first", len(all), err)
	}
	byReason, _ := s.ListDeadLetters(ctx, ordersync.DeadLetterFilter{Reason: ordersync.ReasonUnresolved})
	byOrder, _ := s.ListDeadLetters(ctx, ordersync.DeadLetterFilter{OrderID: "41"})
	if len(byReason) != 1 || len(byOrder) != 1 || byReason[0].ID != first || byOrder[0].ID != first {
		t.Errorf("by reason %d letters, by order %d; want dl-1 each", len(byReason), len(byOrder))
	}
	evs, err := s.ListEvents(ctx, ordersync.EventFilter{MsgID: "dl-1"})
	if err != nil || len(evs) != 1 || evs[0].Outcome != ordersync.OutcomeDeadLettered || evs[0].Type != "SuccessPayment" {
		t.Errorf("event log of a dead letter: %+v, %v; want dead_lettered, its type", evs, err)
	}
	if err := s.MarkDeadLetterReplayed(ctx, first, time.Now()); err != nil {
		t.Fatalf("MarkDeadLetterReplayed: %v", err)
	}
	if err := s.MarkDeadLetterReplayed(ctx, second+100, time.Now()); !errors.Is(err, ordersync.ErrNotFound) {
		t.Errorf("MarkDeadLetterReplayed of an unknown id: %v, want ErrNotFound", err)
	}
	left, _ := s.ListDeadLetters(ctx, ordersync.DeadLetterFilter{})
	withReplayed, _ := s.ListDeadLetters(ctx, ordersync.DeadLetterFilter{IncludeReplayed: true})
	if len(left) != 1 || len(withReplayed) != 2 {
		t.Errorf("after a replay: %d listed, %d with replayed; want 1, 2", len(left), len(withReplayed))
	}
	if dl, _ := s.FindDeadLetter(ctx, first); dl == nil || dl.ReplayedAt == nil || dl.ReplayCount != 1 {
		t.Errorf("replayed letter %+v, want ReplayedAt set, ReplayCount 1", dl)
	}
	// Counts per reason, and pages of a listing by BeforeID.
	if n, err := s.CountDeadLetters(ctx, ordersync.DeadLetterFilter{IncludeReplayed: true, Limit: 1}); err != nil ||
		n[ordersync.ReasonUnresolved] != 1 || n[ordersync.ReasonUnknownOrder] != 1 || len(n) != 2 {
		t.Errorf("CountDeadLetters with replayed = %v, %v; want one of each reason", n, err)
	}
	if n, _ := s.CountDeadLetters(ctx, ordersync.DeadLetterFilter{}); n[ordersync.ReasonUnresolved] != 0 || n[ordersync.ReasonUnknownOrder] != 1 {
		t.Errorf("CountDeadLetters = %v; want the unreplayed unknown_order alone", n)
	}
	page, err := s.ListDeadLetters(ctx, ordersync.DeadLetterFilter{IncludeReplayed: true, BeforeID: second})
	if err != nil || len(page) != 1 || page[0].ID != first {
		t.Errorf("ListDeadLetters before %d = %d letters, %v; want dl-1 alone", second, len(page), err)
	}
	// A replayed letter failing again is a new letter.
	if id, err := s.AddDeadLetter(ctx, ordersync.DeadLetter{MsgID: "dl-1", Account: account, Reason: ordersync.ReasonUnresolved}); err != nil || id == first {
		t.Errorf("dl-1 failing after its replay: id %d, %v; want a new letter", id, err)
	}
}

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

// testDeliveryLog: a webhook-id is one row, the last end of it.
func testDeliveryLog(t *testing.T, s Store) {
	ctx := context.Background()
	at := time.Now()
	rec := ordersync.DeliveryRecord{WebhookID: "wh-1", EndpointID: "ep_1", Event: ordersync.HookEvent("order.paid"), Account: account,
		OrderCode: "Del01", OrderStatus: ordersync.StatusPaid, Outcome: ordersync.DeliveryDeadLettered, Attempts: 3, Status: 500, At: at}
	other := rec
	other.WebhookID, other.At = "wh-2", at.Add(time.Second)
	if err := s.RecordDeliveries(ctx, []ordersync.DeliveryRecord{rec, other}); err != nil {
		t.Fatalf("RecordDeliveries: %v", err)
	}
	rec.Outcome, rec.Status, rec.At = ordersync.DeliveryDelivered, 200, at.Add(2*time.Second)
	if err := s.RecordDeliveries(ctx, []ordersync.DeliveryRecord{rec}); err != nil {
		t.Fatalf("RecordDeliveries again: %v", err)
	}
	got, err := s.ListDeliveries(ctx, ordersync.DeliveryFilter{Account: account, OrderCode: "Del01"})
	if err != nil || len(got) != 2 || got[0].WebhookID != "wh-1" || got[0].Outcome != ordersync.DeliveryDelivered || got[0].Status != 200 {
		t.Errorf("ListDeliveries = %+v, %v; want wh-1 delivered first, then wh-2", got, err)
	}
	// Health: wh-1 delivered, wh-2 dead-lettered, on ep_1; one before the
	// period on ep_2 counts not.
	old := ordersync.DeliveryRecord{WebhookID: "wh-old", EndpointID: "ep_2", Event: rec.Event, Account: account, OrderCode: "Del02",
		Outcome: ordersync.DeliveryGone, Status: 410, At: at.Add(-time.Hour)}
	if err := s.RecordDeliveries(ctx, []ordersync.DeliveryRecord{old}); err != nil {
		t.Fatal(err)
	}
	health, err := s.DeliveryHealth(ctx, at.Add(-time.Minute))
	h := health["ep_1"]
	if err != nil || len(health) != 1 || h.Delivered != 1 || h.Failed != 1 || h.LastFailure == nil || h.LastFailure.WebhookID != "wh-2" || h.LastFailure.Status != 500 {
		t.Errorf("DeliveryHealth = %+v, %v; want ep_1 alone: 1 delivered, 1 failed, wh-2 last", health, err)
	}
	if rate, ok := h.SuccessRate(); !ok || rate != 0.5 {
		t.Errorf("success rate %v %v, want 0.5", rate, ok)
	}
	if err := s.RecordDeliveries(ctx, []ordersync.DeliveryRecord{{WebhookID: "wh-3"}}); err == nil {
		t.Error("RecordDeliveries without an endpoint succeeded")
	}
}

// testReaders: the back office's reads of what was applied.
func testReaders(t *testing.T, s Store) {
	ctx := context.Background()
	if cur, err := s.StoreCurrency(ctx, account); err != nil || cur != "" {
		t.Errorf("StoreCurrency of an empty mirror = %q, %v", cur, err)
	}
	n := seqs(t, s, 3)
	apply(t, s,
		params(order("Read01", 1, ordersync.StatusPending, "x"), n[0]),
		params(order("Read02", 2, ordersync.StatusPaid, "x"), n[1]),
		params(order("Read03", 3, ordersync.StatusPaid, "x"), n[2]))
	if cur, err := s.StoreCurrency(ctx, account); err != nil || cur != "USD" {
		t.Errorf("StoreCurrency = %q, %v; want USD", cur, err)
	}
	counts, err := s.CountOrdersByStatus(ctx)
	if err != nil || counts[ordersync.StatusPaid] != 2 || counts[ordersync.StatusPending] != 1 || counts[ordersync.StatusCancelled] != 0 {
		t.Errorf("CountOrdersByStatus = %v, %v", counts, err)
	}
	if _, ok := counts[ordersync.StatusCancelled]; !ok {
		t.Error("CountOrdersByStatus leaves out a status no order has")
	}
	page, err := s.ListOrders(ctx, ordersync.OrderFilter{Account: account, Statuses: []ordersync.Status{ordersync.StatusPaid}, Limit: 1, Count: true})
	if err != nil || page.Total == nil || *page.Total != 2 || len(page.Orders) != 1 || page.Orders[0].Order.OrderCode != "Read03" {
		t.Errorf("ListOrders = %+v, %v; want 2 in all, Read03 (the newest) on a page of 1", page, err)
	}
	m := find(t, s, "Read02")
	if m.Account != account || m.Order.OrderStatus != ordersync.StatusPaid || m.Order.Total.String() != "10.50" || len(m.Order.Raw) == 0 {
		t.Errorf("FindOrderByCode = %+v", m)
	}
}

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

// testOrderHistory: a fetch that changes a fetched document records when,
// why and which fields changed (names, not values); the first fetch and a
// fetch that changes nothing record none. The history also holds the
// status changes and the outbox messages, the PAID trigger with the time
// it was published, newest first, at most limit of each.
func testOrderHistory(t *testing.T, s Store) {
	ctx := context.Background()
	paid := func(email string) *ordersync.Order {
		o := order("Hist01", 9, ordersync.StatusPaid, "x")
		o.Payment.Buyer.Email = email
		return o
	}
	n := seqs(t, s, 5)
	steps := []ordersync.ApplyParams{
		params(order("Hist01", 9, ordersync.StatusPending, "x"), n[0]),
		params(order("Hist01", 9, ordersync.StatusPending, "x"), n[1]), // unchanged
		params(paid("ana@example.com"), n[2]),
		params(paid("ana@example.org"), n[3]),
		params(paid("ana@example.org"), n[4]), // unchanged
	}
	steps[2].Cause = ordersync.CauseReconcile
	for i := range steps {
		steps[i].FetchedAt = time.Date(2026, 11, 20, 10, i, 0, 0, time.UTC)
		apply(t, s, steps[i])
	}
	h, err := s.FindOrderHistory(ctx, account, "Hist01", 0)
	if err != nil {
		t.Fatalf("FindOrderHistory: %v", err)
	}
	want := []ordersync.DocumentChange{
		{Account: account, OrderCode: "Hist01", At: steps[3].FetchedAt, Cause: ordersync.CauseWebhook, Fields: []string{"Payment.Buyer.Email"}},
		{Account: account, OrderCode: "Hist01", At: steps[2].FetchedAt, Cause: ordersync.CauseReconcile, Fields: []string{"OrderStatus", "Payment"}},
	}
	if len(h.DocumentChanges) != len(want) {
		t.Fatalf("document changes %+v, want %+v", h.DocumentChanges, want)
	}
	for i, c := range h.DocumentChanges {
		w := want[i]
		if c.Account != w.Account || c.OrderCode != w.OrderCode || !c.At.Equal(w.At) || c.Cause != w.Cause || !slices.Equal(c.Fields, w.Fields) {
			t.Errorf("document change %d: %+v, want %+v", i, c, w)
		}
	}
	if len(h.StatusChanges) != 2 || h.StatusChanges[0].From != ordersync.StatusPending || h.StatusChanges[0].To != ordersync.StatusPaid ||
		!h.StatusChanges[0].At.Equal(steps[2].FetchedAt) || h.StatusChanges[1].To != ordersync.StatusPending {
		t.Errorf("status changes %+v, want PENDING → PAID, then the first PENDING", h.StatusChanges)
	}
	var subjects []string
	var trigger ordersync.OutboxMessage
	for _, m := range h.Messages {
		subjects = append(subjects, m.Subject)
		if m.Subject == ordersync.SubjectPaid {
			trigger = m
		}
		if m.Payload != nil || m.SentAt != nil || m.CreatedAt.IsZero() || m.OrderCode != "Hist01" {
			t.Errorf("message %+v: want no payload, not sent, a creation time", m)
		}
	}
	if want := []string{ordersync.SubjectPaid, ordersync.SubjectStatusPrefix + "PAID", ordersync.SubjectStatusPrefix + "PENDING"}; !slices.Equal(subjects, want) {
		t.Fatalf("messages %v, want %v (newest first)", subjects, want)
	}
	sent := time.Date(2026, 11, 20, 11, 0, 0, 0, time.UTC)
	if err := s.MarkOutboxSent(ctx, []int64{trigger.ID}, sent); err != nil {
		t.Fatal(err)
	}
	h, err = s.FindOrderHistory(ctx, account, "Hist01", 1)
	if err != nil || len(h.DocumentChanges) != 1 || len(h.StatusChanges) != 1 || len(h.Messages) != 1 {
		t.Fatalf("FindOrderHistory(limit 1) = %+v, %v; want one of each", h, err)
	}
	if m := h.Messages[0]; m.Subject != ordersync.SubjectPaid || m.SentAt == nil || !m.SentAt.Equal(sent) {
		t.Errorf("the PAID trigger after publishing: %+v, want sent at %v", m, sent)
	}
	if _, err := s.FindOrderHistory(ctx, account, "Nope01", 0); !errors.Is(err, ordersync.ErrNotFound) {
		t.Errorf("FindOrderHistory of an unknown order: %v, want ErrNotFound", err)
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
