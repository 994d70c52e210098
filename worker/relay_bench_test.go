package worker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/rusage"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// BenchmarkRelay: the outbox relay publishing b.N status messages to an
// embedded JetStream and marking them sent, as it does for each order the
// mirror sees for the first time (its PENDING message). The messages carry
// a real order from the simulator. Reports messages/s and the CPU time per
// message of the whole process.
func BenchmarkRelay(b *testing.B) {
	e := newEnv(b, sim.Faults{})
	ctx := context.Background()
	created := e.createOrders(b, 1)
	order, err := e.client.GetOrder(ctx, created[0].OrderCode)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	for first := 0; first < b.N; first += 500 {
		params := make([]ordersync.ApplyParams, 0, 500)
		for i := first; i < min(first+500, b.N); i++ {
			o := *order
			o.OrderCode, o.OrderID, o.Raw = fmt.Sprintf("bench%07d", i), ordersync.ID(fmt.Sprint(900000+i)), nil
			params = append(params, ordersync.ApplyParams{Account: ordersync.DefaultAccount, Order: &o, Seq: int64(i + 1), FetchedAt: now,
				Cause: ordersync.CauseWebhook, Events: []ordersync.EventRecord{{MsgID: fmt.Sprint("bench-", i), Type: ordersync.EventCreated}}})
		}
		if _, err := e.db.ApplyOrders(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
	relay, err := worker.NewRelay(worker.RelayConfig{Outbox: e.db, Publisher: e.q, Registerer: prometheus.NewRegistry(), Logger: e.logger})
	if err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	cpu := rusage.Start(b)
	start := time.Now()
	sent, err := relay.Flush(ctx)
	elapsed := time.Since(start)
	cpu.Stop()
	if err != nil {
		b.Fatal(err)
	}
	if sent != b.N {
		b.Fatalf("relay sent %d messages, want %d", sent, b.N)
	}
	b.ReportMetric(float64(sent)/elapsed.Seconds(), "msgs/s")
	cpu.Report(b, sent, "cpu-µs/msg")
}
