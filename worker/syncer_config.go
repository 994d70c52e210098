package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
)

// RetryConfig shapes the jittered exponential backoff of one fetch.
type RetryConfig struct {
	Initial time.Duration // first wait, default 100ms
	Max     time.Duration // cap of one wait, default 5s
	// MaxElapsed is the budget of one fetch; past it the fetch fails with
	// ErrRetriesExhausted. Default 20s.
	MaxElapsed          time.Duration
	Multiplier          float64 // default 2
	RandomizationFactor float64 // jitter, ±50% by default
}

// BreakerConfig shapes the circuit breaker in front of the upstream.
type BreakerConfig struct {
	// ConsecutiveFailures is how many transient failures in a row open the
	// breaker. Default 10.
	ConsecutiveFailures uint32
	// OpenFor is how long the breaker fails fast before it lets one probe
	// request through. Default 5s.
	OpenFor time.Duration
}

// SyncerConfig configures a Syncer.
type SyncerConfig struct {
	Upstream ordersync.Upstream
	Mirror   ordersync.Mirror
	// Writer applies what the Syncer fetched (SyncOrder, CheckOrder): the
	// process's one MirrorWriter, shared by every account's Syncer and the
	// pool. Nil gives the Syncer a writer of its own on Registerer, for a
	// process that serves one account through one Syncer.
	Writer *MirrorWriter
	// RequestsPerSecond is a fixed cap on the requests sent to the
	// upstream; 0 sets none. Either way the upstream's 429s lower the rate
	// (RateFloor, RateRecovery). Burst is the cap's bucket size, default a
	// tenth of a second's worth (at least 1).
	RequestsPerSecond float64
	Burst             int
	// RateFloor is the lowest rate, in requests per second, that the
	// upstream's 429s lower the requests to. Default DefaultRateFloor.
	RateFloor float64
	// RateRecovery is how long a rate the 429s lowered takes to climb
	// back to where they met it, after which it is lifted. Default
	// DefaultRateRecovery.
	RateRecovery time.Duration
	Retry        RetryConfig
	Breaker      BreakerConfig
	// CredentialsProbeInterval is how often one request is let through while
	// fetching is paused on rejected credentials. Default 10s.
	CredentialsProbeInterval time.Duration
	// Registerer receives the fetch and mirror collectors; nil keeps them
	// unregistered.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// Clock stamps fetches; default time.Now. Waits use real timers.
	Clock func() time.Time
}

func (c SyncerConfig) withDefaults() SyncerConfig {
	if c.Burst == 0 && c.RequestsPerSecond > 0 {
		c.Burst = max(1, int(math.Ceil(c.RequestsPerSecond/10)))
	}
	if c.RateFloor == 0 {
		c.RateFloor = DefaultRateFloor
	}
	if c.RateRecovery == 0 {
		c.RateRecovery = DefaultRateRecovery
	}
	if c.Retry.Initial == 0 {
		c.Retry.Initial = 100 * time.Millisecond
	}
	if c.Retry.Max == 0 {
		c.Retry.Max = 5 * time.Second
	}
	if c.Retry.MaxElapsed == 0 {
		c.Retry.MaxElapsed = 20 * time.Second
	}
	if c.Retry.Multiplier == 0 {
		c.Retry.Multiplier = 2
	}
	if c.Retry.RandomizationFactor == 0 {
		c.Retry.RandomizationFactor = 0.5
	}
	if c.Breaker.ConsecutiveFailures == 0 {
		c.Breaker.ConsecutiveFailures = 10
	}
	if c.Breaker.OpenFor == 0 {
		c.Breaker.OpenFor = 5 * time.Second
	}
	if c.CredentialsProbeInterval == 0 {
		c.CredentialsProbeInterval = 10 * time.Second
	}
	defaultDeps(&c.Registerer, &c.Logger, &c.Clock)
	return c
}

func (c SyncerConfig) validate() error {
	switch {
	case c.Upstream == nil:
		return errors.New("worker: SyncerConfig.Upstream is required")
	case c.Mirror == nil:
		return errors.New("worker: SyncerConfig.Mirror is required")
	case c.RequestsPerSecond < 0 || math.IsNaN(c.RequestsPerSecond) || math.IsInf(c.RequestsPerSecond, 0):
		return fmt.Errorf("worker: SyncerConfig.RequestsPerSecond must be a finite number ≥ 0, got %v", c.RequestsPerSecond)
	case !(c.RateFloor > 0) || math.IsInf(c.RateFloor, 0):
		return fmt.Errorf("worker: SyncerConfig.RateFloor must be a finite number > 0, got %v", c.RateFloor)
	case c.RateRecovery < 0:
		return fmt.Errorf("worker: SyncerConfig.RateRecovery must be > 0, got %v", c.RateRecovery)
	case c.Burst < 0:
		return fmt.Errorf("worker: SyncerConfig.Burst must be ≥ 0, got %d", c.Burst)
	case c.Retry.Initial < 0:
		return fmt.Errorf("worker: SyncerConfig.Retry.Initial must be > 0, got %v", c.Retry.Initial)
	case c.Retry.Max < c.Retry.Initial:
		return fmt.Errorf("worker: SyncerConfig.Retry.Max (%v) must be ≥ Retry.Initial (%v)", c.Retry.Max, c.Retry.Initial)
	case c.Retry.MaxElapsed < 0:
		return fmt.Errorf("worker: SyncerConfig.Retry.MaxElapsed must be > 0, got %v", c.Retry.MaxElapsed)
	case c.Retry.Multiplier < 1:
		return fmt.Errorf("worker: SyncerConfig.Retry.Multiplier must be ≥ 1, got %v", c.Retry.Multiplier)
	case c.Retry.RandomizationFactor < 0 || c.Retry.RandomizationFactor > 1:
		return fmt.Errorf("worker: SyncerConfig.Retry.RandomizationFactor must be in [0, 1], got %v", c.Retry.RandomizationFactor)
	case c.Breaker.OpenFor < 0:
		return fmt.Errorf("worker: SyncerConfig.Breaker.OpenFor must be > 0, got %v", c.Breaker.OpenFor)
	case c.CredentialsProbeInterval < 0:
		return fmt.Errorf("worker: SyncerConfig.CredentialsProbeInterval must be > 0, got %v", c.CredentialsProbeInterval)
	}
	return nil
}
