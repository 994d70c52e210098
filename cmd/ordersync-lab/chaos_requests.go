package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ordersync/ordersync/internal/child"
)

// requestTally adds up the pipeline's upstream requests by why they were
// sent, across its restarts: the counters of each process, read every
// second from its /metrics, are added to the total when the process
// changes. What a process counted in the second before it was killed is
// lost, so the tally is a little below the simulator's count.
type requestTally struct {
	mu sync.Mutex
	// done is what the processes that are gone counted; last what the
	// current one (pid) counted at the last read.
	done, last map[string]float64
	pid        int
}

// requestsOther is the tally's key for every fetch the reconciler did
// not send; the others are its reasons (ordersync_reconcile_requests_total).
const requestsOther = "webhook and other fetches"

// watch reads p's counters every second until ctx is done.
func (t *requestTally) watch(ctx context.Context, c *child.Process) {
	p := &proc{name: "pipeline", Process: c}
	for {
		t.read(ctx, p)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (t *requestTally) read(ctx context.Context, p *proc) {
	pid := p.PID()
	if pid == 0 {
		return
	}
	fams, err := scrapeMetrics(ctx, p)
	if err != nil {
		return // starting or dying: read again at the next tick
	}
	now := map[string]float64{}
	var reconcile float64
	if fam := fams["ordersync_reconcile_requests_total"]; fam != nil {
		for _, m := range fam.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "reason" {
					now[lp.GetValue()] += m.GetCounter().GetValue()
					reconcile += m.GetCounter().GetValue()
				}
			}
		}
	}
	now[requestsOther] = metricSum(fams, "ordersync_fetch_requests_total") - reconcile
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done == nil {
		t.done = map[string]float64{}
	}
	if pid != t.pid {
		for k, v := range t.last {
			t.done[k] += v
		}
		t.pid = pid
	}
	t.last = now
}

// total is the tally so far.
func (t *requestTally) total() map[string]float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	sum := map[string]float64{}
	for k, v := range t.done {
		sum[k] += v
	}
	for k, v := range t.last {
		sum[k] += v
	}
	return sum
}

// printRequestBreakdown prints the tally per order, largest first.
func printRequestBreakdown(w io.Writer, byReason map[string]float64, orders int) {
	if len(byReason) == 0 || orders == 0 {
		return
	}
	keys := make([]string, 0, len(byReason))
	var all float64
	for k, v := range byReason {
		all += v
		if v > 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return byReason[keys[i]] > byReason[keys[j]] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.2f (%.0f)", k, byReason[k]/float64(orders), byReason[k])
	}
	fmt.Fprintf(w, "  upstream requests by reason   %.2f per order as the pipeline counted them (read every second): %s\n", all/float64(orders), strings.Join(parts, ", "))
}
