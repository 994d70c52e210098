package worker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// TestConfigValidation: a wrong setting is refused naming the field.
func TestConfigValidation(t *testing.T) {
	e := newEnv(t, sim.Faults{})
	s := e.newSyncer(t, nil, nil)
	syncerTests := []struct {
		field string
		edit  func(*worker.SyncerConfig)
	}{
		{"Upstream", func(c *worker.SyncerConfig) { c.Upstream = nil }},
		{"Mirror", func(c *worker.SyncerConfig) { c.Mirror = nil }},
		{"RequestsPerSecond", func(c *worker.SyncerConfig) { c.RequestsPerSecond = -1 }},
		{"Burst", func(c *worker.SyncerConfig) { c.Burst = -1 }},
		{"Retry.Max", func(c *worker.SyncerConfig) { c.Retry.Initial, c.Retry.Max = time.Second, time.Millisecond }},
		{"Retry.Multiplier", func(c *worker.SyncerConfig) { c.Retry.Multiplier = 0.5 }},
		{"Retry.RandomizationFactor", func(c *worker.SyncerConfig) { c.Retry.RandomizationFactor = 2 }},
		{"Breaker.OpenFor", func(c *worker.SyncerConfig) { c.Breaker.OpenFor = -time.Second }},
	}
	for _, tt := range syncerTests {
		cfg := worker.SyncerConfig{Upstream: e.client, Mirror: e.db}
		tt.edit(&cfg)
		if _, err := worker.NewSyncer(cfg); err == nil || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("NewSyncer with a bad %s: %v, want an error naming it", tt.field, err)
		}
	}
	poolTests := []struct {
		field string
		edit  func(*worker.PoolConfig)
	}{
		{"Source", func(c *worker.PoolConfig) { c.Source = nil }},
		{"Syncer", func(c *worker.PoolConfig) { c.Syncer = nil }},
		{"Mirror", func(c *worker.PoolConfig) { c.Mirror = nil }},
		{"FetchConcurrency", func(c *worker.PoolConfig) { c.FetchConcurrency = -1 }},
		{"BatchSize", func(c *worker.PoolConfig) { c.BatchSize = -5 }},
		{"MaxAttempts", func(c *worker.PoolConfig) { c.MaxAttempts = -1 }},
		{"UnresolvedRetryDelays[1]", func(c *worker.PoolConfig) { c.UnresolvedRetryDelays = []time.Duration{time.Second, 0} }},
	}
	for _, tt := range poolTests {
		cfg := worker.PoolConfig{Source: e.q.Events(), Syncer: s, Mirror: e.db}
		tt.edit(&cfg)
		if _, err := worker.NewPool(cfg); err == nil || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("NewPool with a bad %s: %v, want an error naming it", tt.field, err)
		}
	}
	if _, err := worker.NewPool(worker.PoolConfig{Source: e.q.Events(), Syncer: s, Mirror: e.db}); err != nil {
		t.Errorf("NewPool with defaults: %v", err)
	}
}
