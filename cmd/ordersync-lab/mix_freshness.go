package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/loadpost"
	"github.com/ordersync/ordersync/store"
)

const (
	// freshnessEvery is how often the lab reads the read side's lag while
	// the load runs: often enough for a p99 over a run of seconds, from
	// the lab's own connection so the pipeline's CPU does not include it.
	freshnessEvery = 100 * time.Millisecond
	// freshnessIdleProbes is how many single status changes, one at a
	// time on the idle pipeline, measure the idle lag.
	freshnessIdleProbes = 20
	// freshnessIdlePoll is how often a probe reads the lag: its
	// resolution.
	freshnessIdlePoll = 2 * time.Millisecond
)

// lagSampler reads the indexer's lag (store.IndexStatus, the figure of
// ordersync_indexer_lag_seconds) every freshnessEvery until stopped. A
// mirror without an indexer (an older schema) ends it with err set.
type lagSampler struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	samples []time.Duration
	err     error
}

func startLagSampler(ctx context.Context, db *store.DB) *lagSampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &lagSampler{cancel: cancel}
	s.wg.Go(func() {
		t := time.NewTicker(freshnessEvery)
		defer t.Stop()
		for {
			st, err := db.IndexStatus(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				s.err = err
				return
			}
			s.samples = append(s.samples, st.Lag(time.Now()))
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return s
}

// stop ends the sampling and returns the samples sorted.
func (s *lagSampler) stop() ([]time.Duration, error) {
	s.cancel()
	s.wg.Wait()
	slices.Sort(s.samples)
	return s.samples, s.err
}

// idleFreshness measures the idle pipeline's lag: it waits until the
// indexer has caught up after the load (returning how long that took),
// then finalizes the orders of stay one at a time, each with one webhook,
// and for each reads the lag every freshnessIdlePoll until the indexer has
// taken the change; the largest lag seen is that change's.
func (m *mixRun) idleFreshness(ctx context.Context, poster *loadpost.Poster, stay []ordersync.PaymentLinkResult) (caughtUp time.Duration, lags []time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
	defer cancel()
	db, start := m.lp.db, time.Now()
	var st store.IndexStatus
	for {
		if st, err = db.IndexStatus(ctx); err != nil {
			return 0, nil, err
		}
		if !st.Behind() {
			break
		}
		time.Sleep(freshnessIdlePoll)
	}
	caughtUp = time.Since(start)
	for i, o := range stay[:min(len(stay), freshnessIdleProbes)] {
		if _, err := m.lp.sim.Finalize(o.OrderCode); err != nil {
			return caughtUp, lags, err
		}
		from := st.Position
		if _, refused := postBodies(ctx, poster, [][]byte{webhookBody(o, ordersync.EventFinalized, 4*m.opts.Orders+i)}, 1); refused != 0 {
			return caughtUp, lags, fmt.Errorf("mix: an idle probe's webhook was refused")
		}
		var worst time.Duration
		for {
			if st, err = db.IndexStatus(ctx); err != nil {
				return caughtUp, lags, err
			}
			if st.Behind() {
				worst = max(worst, st.Lag(time.Now()))
			} else if st.Position > from {
				break
			}
			time.Sleep(freshnessIdlePoll)
		}
		lags = append(lags, worst)
	}
	slices.Sort(lags)
	return caughtUp, lags, nil
}

// freshnessReport is the report's line for the back office's freshness.
func freshnessReport(load []time.Duration, loadErr error, caughtUp time.Duration, idle []time.Duration, idleErr error) string {
	if loadErr != nil || len(load) == 0 {
		return fmt.Sprintf("n/a (no indexer reports one: %v)", loadErr)
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	s := fmt.Sprintf("in load p50 %s, p99 %s, max %s (%d samples %s apart); caught up %s after the load",
		ms(quantile(load, 0.5)), ms(quantile(load, 0.99)), ms(quantile(load, 1)), len(load), freshnessEvery, ms(caughtUp))
	if idleErr != nil || len(idle) == 0 {
		return s + fmt.Sprintf("; idle n/a (%v)", idleErr)
	}
	return s + fmt.Sprintf("; idle p50 %s, max %s (%d single changes, read every %s)", ms(quantile(idle, 0.5)), ms(quantile(idle, 1)), len(idle), freshnessIdlePoll)
}
