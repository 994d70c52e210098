package worker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
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

// TestStagesNameTheMissingField: every stage is built the same way (a
// Config, its defaults, a validation naming the field), and a config that
// leaves out a required dependency is refused as "worker:
// <Stage>Config.<Field> is required".
func TestStagesNameTheMissingField(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Faults{})
	s := e.newSyncer(t, nil, nil)
	accounts := worker.Accounts{ordersync.DefaultAccount: s}
	follower := func(edit func(*worker.FollowerConfig)) func() error {
		return func() error {
			cfg := worker.FollowerConfig{Accounts: accounts, Mirror: e.db, Reader: e.db}
			edit(&cfg)
			_, err := worker.NewFollower(cfg)
			return err
		}
	}
	replayer := func(edit func(*worker.ReplayerConfig)) func() error {
		return func() error {
			cfg := worker.ReplayerConfig{DeadLetters: e.db, Publisher: e.q}
			edit(&cfg)
			_, err := worker.NewReplayer(cfg)
			return err
		}
	}
	relay := func(edit func(*worker.RelayConfig)) func() error {
		return func() error {
			cfg := worker.RelayConfig{Outbox: e.db, Publisher: e.q}
			edit(&cfg)
			_, err := worker.NewRelay(cfg)
			return err
		}
	}
	reconciler := func(edit func(*worker.ReconcilerConfig)) func() error {
		return func() error {
			cfg := worker.ReconcilerConfig{Schedule: e.db, Syncer: s}
			edit(&cfg)
			_, err := worker.NewReconciler(cfg)
			return err
		}
	}
	pruner := func(edit func(*worker.PrunerConfig)) func() error {
		return func() error {
			cfg := worker.PrunerConfig{Store: e.db}
			edit(&cfg)
			_, err := worker.NewPruner(cfg)
			return err
		}
	}
	syncer := func(edit func(*worker.SyncerConfig)) func() error {
		return func() error {
			cfg := worker.SyncerConfig{Upstream: e.client, Mirror: e.db}
			edit(&cfg)
			_, err := worker.NewSyncer(cfg)
			return err
		}
	}
	pool := func(edit func(*worker.PoolConfig)) func() error {
		return func() error {
			cfg := worker.PoolConfig{Source: e.q.Events(), Syncer: s, Mirror: e.db}
			edit(&cfg)
			_, err := worker.NewPool(cfg)
			return err
		}
	}
	tests := []struct {
		want  string
		build func() error
	}{
		{"worker: FollowerConfig.Accounts is required", follower(func(c *worker.FollowerConfig) { c.Accounts = nil })},
		{"worker: FollowerConfig.Accounts is required", follower(func(c *worker.FollowerConfig) { c.Accounts = worker.Accounts{} })},
		{`worker: FollowerConfig.Accounts["acme"] is nil`, follower(func(c *worker.FollowerConfig) { c.Accounts = worker.Accounts{"acme": nil} })},
		{"worker: FollowerConfig.Mirror is required", follower(func(c *worker.FollowerConfig) { c.Mirror = nil })},
		{"worker: FollowerConfig.Reader is required", follower(func(c *worker.FollowerConfig) { c.Reader = nil })},
		{"worker: ReplayerConfig.DeadLetters is required", replayer(func(c *worker.ReplayerConfig) { c.DeadLetters = nil })},
		{"worker: ReplayerConfig.Publisher is required", replayer(func(c *worker.ReplayerConfig) { c.Publisher = nil })},
		{"worker: RelayConfig.Outbox is required", relay(func(c *worker.RelayConfig) { c.Outbox = nil })},
		{"worker: RelayConfig.Publisher is required", relay(func(c *worker.RelayConfig) { c.Publisher = nil })},
		{"worker: ReconcilerConfig.Syncer is required", reconciler(func(c *worker.ReconcilerConfig) { c.Syncer = nil })},
		{"worker: ReconcilerConfig.Schedule or Source is required", reconciler(func(c *worker.ReconcilerConfig) { c.Schedule = nil })},
		{"worker: PrunerConfig.Store is required", pruner(func(c *worker.PrunerConfig) { c.Store = nil })},
		{"worker: PrunerConfig.OutboxRetention must be ≥ 0", pruner(func(c *worker.PrunerConfig) { c.OutboxRetention = -time.Hour })},
		{"worker: PrunerConfig.EventLogRetention must be ≥ 0", pruner(func(c *worker.PrunerConfig) { c.EventLogRetention = -time.Hour })},
		{"worker: PrunerConfig.AuditRetention must be ≥ 0", pruner(func(c *worker.PrunerConfig) { c.AuditRetention = -time.Hour })},
		{"worker: SyncerConfig.Upstream is required", syncer(func(c *worker.SyncerConfig) { c.Upstream = nil })},
		{"worker: SyncerConfig.Mirror is required", syncer(func(c *worker.SyncerConfig) { c.Mirror = nil })},
		{"worker: PoolConfig.Source is required", pool(func(c *worker.PoolConfig) { c.Source = nil })},
		{"worker: PoolConfig.Syncer is required", pool(func(c *worker.PoolConfig) { c.Syncer = nil })},
		{"worker: PoolConfig.Mirror is required", pool(func(c *worker.PoolConfig) { c.Mirror = nil })},
	}
	for _, tt := range tests {
		if err := tt.build(); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("got %v, want %q", err, tt.want)
		}
	}
	// With every required field and nothing else, the defaults fill in
	// the rest and every stage builds.
	for name, build := range map[string]func() error{
		"follower": follower(unchanged), "replayer": replayer(unchanged), "relay": relay(unchanged),
		"reconciler": reconciler(unchanged), "pruner": pruner(unchanged),
		"syncer": syncer(unchanged), "pool": pool(unchanged),
	} {
		if err := build(); err != nil {
			t.Errorf("%s with its required fields only: %v", name, err)
		}
	}
}

// unchanged leaves a config as it is.
func unchanged[C any](*C) {}
