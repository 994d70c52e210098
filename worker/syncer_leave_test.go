package worker_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/fake"
	"github.com/ordersync/ordersync/worker"
)

// TestCheckWaitsForAFetchAboutToLeave: a webhook's fetch that has taken
// its turn still counts as waiting until its request leaves, so a check
// that takes the next turn meanwhile cannot reach the upstream first. The
// fetch is held where its request is about to leave, as a slow sequence
// round trip or the pool's round holds it on a busy machine; the clock is
// synctest's, so "the check is still waiting" is synctest.Wait and no
// window.
func TestCheckWaitsForAFetchAboutToLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		up := fake.NewUpstream()
		ctx := t.Context()
		var codes []string
		for range 2 {
			amount := ordersync.MustAmount("12.50")
			link, err := up.CreatePaymentLink(ctx, ordersync.PaymentLinkParams{Amount: &amount})
			if err != nil {
				t.Fatal(err)
			}
			codes = append(codes, link.OrderCode)
		}
		webhook, checked := codes[0], codes[1]
		s, err := worker.NewSyncer(worker.SyncerConfig{Upstream: up, Mirror: fake.NewStore(), Registerer: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		// A failed test lets the fetch go too, so the bubble can end.
		leave := sync.OnceFunc(func() { close(release) })
		defer leave()
		fetched := make(chan error, 1)
		go func() { fetched <- s.FetchLeavingForTest(ctx, webhook, func() { <-release }) }()
		synctest.Wait()
		done := make(chan error, 1)
		go func() {
			_, err := s.CheckOrder(ctx, ordersync.DefaultAccount, checked, func(context.Context) error { return nil })
			done <- err
		}()
		synctest.Wait()
		if n := up.Fetches(checked); n != 0 {
			t.Fatal("the check reached the upstream while a webhook's fetch was about to leave")
		}
		leave()
		if err := <-fetched; err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if a, b := up.Fetches(webhook), up.Fetches(checked); a != 1 || b != 1 {
			t.Errorf("fetches: the webhook's %d, the check's %d; want 1 each", a, b)
		}
	})
}
