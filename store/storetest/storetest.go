// Package storetest is the conformance suite of the root package's store
// interfaces, one file per area: the behaviour the stages and the back
// office rely on from any mirror (the sequence guard, the outbox's
// exactly-once PAID trigger, dead letters, the reconciler's schedule, the
// logs, the overview; the endpoints, delivery dead letters, the audit
// trail, console sessions, replay jobs and receiver heartbeats). store.DB
// runs it on SQLite and PostgreSQL; fake.Store runs it in memory, which is
// what keeps the fake honest.
package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// Store is what the suite exercises: the interfaces the stages and the
// back office write and read the mirror through.
type Store interface {
	ordersync.Mirror
	ordersync.OrderCodesResolver
	ordersync.MirrorReader
	ordersync.DeadLetters
	ordersync.Outbox
	ordersync.CheckSchedule
	ordersync.DeliveryLog
	ordersync.OverviewReader
	ordersync.LastFetchReader
	ordersync.AuditLog
	ordersync.ConsoleSessions
	ordersync.DeliveryDeadLetters
	ordersync.ReplayJobs
	ordersync.ReceiverHeartbeats
	ordersync.Endpoints
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
		{"FetchSeqLease", testFetchSeqLease},
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
		{"ListSummary", testListSummary},
		{"Overview", testOverview},
		{"OrderHistory", testOrderHistory},
		{"LastFetch", testLastFetch},
		{"AuditLog", testAuditLog},
		{"ConsoleSessions", testConsoleSessions},
		{"DeliveryDeadLetters", testDeliveryDeadLetters},
		{"ReplayJobs", testReplayJobs},
		{"ReceiverHeartbeats", testReceiverHeartbeats},
		{"Endpoints", testEndpoints},
		{"ConfigEndpoints", testConfigEndpoints},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Each case has a store of its own: they run side by side.
			t.Parallel()
			c.test(t, open(t))
		})
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
