package worker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/worker"
)

// TestPruner: a pass deletes, chunk after chunk, every published outbox
// message, event log row, delivery log row and document change past its
// retention, keeps
// the rest and the unpublished messages, and counts what it deleted.
func TestPruner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, store.Config{URL: testdb.SQLitePath(t)})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	defer db.Close()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

	// Seven orders, one outbox message each: five published 3 days ago,
	// one an hour ago, one never.
	for i := range 7 {
		o, err := ordersync.DecodeOrder(fmt.Appendf(nil, `{"orderId":%d,"orderCode":"pr%d","orderStatus":"PENDING"}`, i+1, i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ApplyOrders(ctx, []ordersync.ApplyParams{{Account: "default", Order: o, Seq: int64(i + 1)}}); err != nil {
			t.Fatal(err)
		}
	}
	// Document changes, under the event log's retention: pr0's document
	// changed 40 days ago, pr1's yesterday (names only: no new status, no
	// outbox message).
	for i, age := range []time.Duration{40 * 24 * time.Hour, 24 * time.Hour} {
		o, err := ordersync.DecodeOrder(fmt.Appendf(nil, `{"orderId":%d,"orderCode":"pr%d","orderStatus":"PENDING","name":"renamed"}`, i+1, i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ApplyOrders(ctx, []ordersync.ApplyParams{{Account: "default", Order: o, Seq: int64(8 + i), FetchedAt: now.Add(-age)}}); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := db.PendingOutbox(ctx, 10)
	if err != nil || len(msgs) != 7 {
		t.Fatalf("PendingOutbox = %d, %v; want 7", len(msgs), err)
	}
	for i, m := range msgs[:6] {
		at := now.Add(-72 * time.Hour)
		if i == 5 {
			at = now.Add(-time.Hour)
		}
		if err := db.MarkOutboxSent(ctx, []int64{m.ID}, at); err != nil {
			t.Fatal(err)
		}
	}
	// Event log: three rows 40 days old, two from yesterday.
	var events []ordersync.EventRecord
	for i, age := range []time.Duration{40 * 24 * time.Hour, 40 * 24 * time.Hour, 40 * 24 * time.Hour, 24 * time.Hour, 24 * time.Hour} {
		events = append(events, ordersync.EventRecord{MsgID: fmt.Sprint("ev-", i), Account: "default", ReceivedAt: now.Add(-age), Type: ordersync.EventCreated})
	}
	if err := db.RecordEvents(ctx, events); err != nil {
		t.Fatal(err)
	}
	// Delivery log, under the event log's retention: two deliveries 40
	// days old, one from yesterday.
	var deliveries []ordersync.DeliveryRecord
	for i, age := range []time.Duration{40 * 24 * time.Hour, 40 * 24 * time.Hour, 24 * time.Hour} {
		deliveries = append(deliveries, ordersync.DeliveryRecord{WebhookID: fmt.Sprint("msg_", i), EndpointID: "erp", Event: ordersync.HookOrderPaid,
			Account: "default", OrderCode: "pr0", Outcome: ordersync.DeliveryDelivered, Attempts: 1, Status: 200, At: now.Add(-age)})
	}
	if err := db.RecordDeliveries(ctx, deliveries); err != nil {
		t.Fatal(err)
	}

	// Audit trail: three records 500 days old, one from yesterday; console
	// sessions: one expired a minute ago, one expiring in an hour.
	for i, age := range []time.Duration{500 * 24 * time.Hour, 500 * 24 * time.Hour, 500 * 24 * time.Hour, 24 * time.Hour} {
		if err := db.RecordAudit(ctx, ordersync.AuditRecord{At: now.Add(-age), Actor: "ops", Via: ordersync.ViaAPI, Action: "dead-letter.replay",
			Object: fmt.Sprint("dead-letter ", i), Outcome: ordersync.OutcomeOK}); err != nil {
			t.Fatal(err)
		}
	}
	for id, expires := range map[string]time.Time{"gone": now.Add(-time.Minute), "live": now.Add(time.Hour)} {
		if err := db.CreateConsoleSession(ctx, ordersync.ConsoleSession{ID: id, TokenIdentity: "ti", TokenName: "ops", CreatedAt: now.Add(-2 * time.Hour), ExpiresAt: expires}); err != nil {
			t.Fatal(err)
		}
	}

	// Replay jobs: one ended 40 days ago, one ended yesterday, and one
	// whose process died 35 days ago (still marked running).
	for _, j := range []struct {
		started time.Duration
		ended   time.Duration
	}{{41 * 24 * time.Hour, 40 * 24 * time.Hour}, {3 * 24 * time.Hour, 24 * time.Hour}, {35 * 24 * time.Hour, 0}} {
		job, err := db.StartReplayJob(ctx, ordersync.ReplayJob{Query: "reason=malformed", Actor: "ops", Process: "p", Started: now.Add(-j.started)})
		if err != nil {
			t.Fatal(err)
		}
		if j.ended > 0 {
			if err := db.EndReplayJob(ctx, job.ID, ordersync.ReplayJobProgress{}, ordersync.JobFinished, now.Add(-j.ended)); err != nil {
				t.Fatal(err)
			}
		}
	}

	reg := prometheus.NewRegistry()
	p, err := worker.NewPruner(worker.PrunerConfig{Store: db, OutboxRetention: 48 * time.Hour, EventLogRetention: 30 * 24 * time.Hour,
		AuditRetention: 400 * 24 * time.Hour, ReplayJobRetention: 30 * 24 * time.Hour, Chunk: 2, Registerer: reg, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := p.Prune(ctx)
	if err != nil || rep != (worker.PruneReport{Outbox: 5, EventLog: 3, DeliveryLog: 2, DocumentChanges: 1, AuditLog: 3, ConsoleSessions: 1, ReplayJobs: 2}) {
		t.Fatalf("Prune = %+v, %v; want 5 outbox messages, 3 event log rows, 2 delivery log rows, 1 document change, 3 audit records, 1 session, 2 replay jobs", rep, err)
	}
	if rep, err := p.Prune(ctx); err != nil || rep != (worker.PruneReport{}) {
		t.Errorf("second Prune = %+v, %v; want nothing left to prune", rep, err)
	}
	if pending, err := db.PendingOutbox(ctx, 10); err != nil || len(pending) != 1 || pending[0].ID != msgs[6].ID {
		t.Errorf("unpublished message: %+v, %v; want it kept", pending, err)
	}
	if rows, err := db.ListEvents(ctx, ordersync.EventFilter{Account: "default"}); err != nil || len(rows) != 2 {
		t.Errorf("event log after pruning: %d rows, %v; want yesterday's 2", len(rows), err)
	}
	if rows, err := db.ListDeliveries(ctx, ordersync.DeliveryFilter{Account: "default"}); err != nil || len(rows) != 1 {
		t.Errorf("delivery log after pruning: %d rows, %v; want yesterday's 1", len(rows), err)
	}
	for i, want := range []int{0, 1} {
		if h, err := db.FindOrderHistory(ctx, "default", fmt.Sprint("pr", i), 0); err != nil || len(h.DocumentChanges) != want {
			t.Errorf("pr%d's document changes after pruning: %+v, %v; want %d", i, h.DocumentChanges, err, want)
		}
	}
	if page, err := db.ListAudit(ctx, ordersync.AuditFilter{}); err != nil || len(page.Records) != 1 {
		t.Errorf("audit trail after pruning: %+v, %v; want yesterday's record", page.Records, err)
	}
	if _, err := db.FindConsoleSession(ctx, "live", now); err != nil {
		t.Errorf("the live session: %v", err)
	}
	if jobs, err := db.ListReplayJobs(ctx, 10); err != nil || len(jobs) != 1 || !jobs[0].Ended.Equal(now.Add(-24*time.Hour)) {
		t.Errorf("replay jobs after pruning: %+v, %v; want yesterday's", jobs, err)
	}
	want := `
# HELP ordersync_pruned_rows_total Rows the pruner deleted past their retention, by table (outbox, event_log, delivery_log, document_changes, audit_log, console_sessions, replay_jobs).
# TYPE ordersync_pruned_rows_total counter
ordersync_pruned_rows_total{table="audit_log"} 3
ordersync_pruned_rows_total{table="console_sessions"} 1
ordersync_pruned_rows_total{table="delivery_log"} 2
ordersync_pruned_rows_total{table="document_changes"} 1
ordersync_pruned_rows_total{table="event_log"} 3
ordersync_pruned_rows_total{table="outbox"} 5
ordersync_pruned_rows_total{table="replay_jobs"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ordersync_pruned_rows_total"); err != nil {
		t.Error(err)
	}
}

// TestPrunerRun: Run prunes at once, then returns when its context ends;
// with no retention it returns at once.
func TestPrunerRun(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, store.Config{URL: testdb.SQLitePath(t)})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	defer db.Close()
	if err := db.RecordEvents(ctx, []ordersync.EventRecord{{MsgID: "old", Account: "default", ReceivedAt: time.Now().Add(-time.Hour), Type: ordersync.EventCreated}}); err != nil {
		t.Fatal(err)
	}
	p, err := worker.NewPruner(worker.PrunerConfig{Store: db, EventLogRetention: time.Minute, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	testenv.Await(t, 10*time.Second, 10*time.Millisecond, func() error {
		rows, err := db.ListEvents(ctx, ordersync.EventFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) > 0 {
			return fmt.Errorf("Run has not pruned the old event: %d rows", len(rows))
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil once its context ended", err)
	}

	idle, err := worker.NewPruner(worker.PrunerConfig{Store: db})
	if err != nil {
		t.Fatal(err)
	}
	if err := idle.Run(ctx); err != nil {
		t.Errorf("Run with no retention = %v, want nil at once", err)
	}
	if _, err := worker.NewPruner(worker.PrunerConfig{Store: db, OutboxRetention: -time.Hour}); err == nil {
		t.Error("NewPruner with a negative retention succeeded")
	}
	if _, err := worker.NewPruner(worker.PrunerConfig{}); err == nil {
		t.Error("NewPruner without a store succeeded")
	}
}
