package queue

import (
	"context"
	"errors"
	"fmt"
	collect "github.com/ordersync/ordersync/metrics"
	"log/slog"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// ErrLeadershipLost is the cause of a leader function's context
// cancellation when the lease could not be renewed (the key was taken,
// deleted or purged, the server did not answer in time, or the connection
// closed). context.Cause of the function's ctx wraps it.
var ErrLeadershipLost = errors.New("leadership lost")

// ErrLeaderRunning is returned by Run when the Leader is already running.
var ErrLeaderRunning = errors.New("leader: Run already in progress")

// LeaderConfig configures a Leader.
type LeaderConfig struct {
	// Bucket is the JetStream key-value bucket holding the leases; default
	// "ordersync_leaders". Every leader sharing a bucket must use the same
	// TTL, since the bucket's MaxAge is the lease.
	Bucket string
	// Name is the role the processes compete for ("relay", "reconciler"),
	// the key in the bucket. Required.
	Name string
	// ID identifies this process in the lease; default
	// "<hostname>-<pid>-<random>".
	ID string
	// TTL is how long a lease lasts without renewal: the failover time when
	// the holder dies. The holder renews every TTL/3 and campaigners try every
	// TTL/6 to TTL/3. Default 10s, at least 300ms.
	TTL time.Duration
	// Replicas of the bucket; default 1. Use 3 on a cluster.
	Replicas   int
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

const minLeaderTTL = 300 * time.Millisecond

var (
	validBucket = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
	validKey    = regexp.MustCompile(`^[-/_=.a-zA-Z0-9]+$`)
)

func (c *LeaderConfig) withDefaults() {
	if c.Bucket == "" {
		c.Bucket = "ordersync_leaders"
	}
	if c.ID == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "unknown"
		}
		c.ID = host + "-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(rand.Uint64()&0xffffff, 16)
	}
	if c.TTL == 0 {
		c.TTL = 10 * time.Second
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *LeaderConfig) validate() error {
	switch {
	case !validBucket.MatchString(c.Bucket):
		return fmt.Errorf("leader: Bucket %q is not a valid bucket name (letters, digits, _ and -)", c.Bucket)
	case c.Name == "" || !validKey.MatchString(c.Name) || c.Name[0] == '.' || c.Name[len(c.Name)-1] == '.':
		return fmt.Errorf("leader: Name %q is not a valid key (letters, digits and -/_=.)", c.Name)
	case c.TTL < minLeaderTTL:
		return fmt.Errorf("leader: TTL %s is below the minimum %s", c.TTL, minLeaderTTL)
	case c.Replicas < 1 || c.Replicas > 5:
		return fmt.Errorf("leader: Replicas %d out of range 1..5", c.Replicas)
	}
	return nil
}

// Leader elects one process among those sharing a role. The lease is a key
// in a JetStream key-value bucket whose MaxAge is the TTL: the holder
// creates the key (which fails while another holds it), rewrites it every
// TTL/3 under a revision check (a failed rewrite means leadership is lost at
// once), and deletes it under a revision check when it stops, so a
// campaigner takes over within one campaign interval. A holder that dies
// stops renewing and its key expires after TTL.
//
// The holder also keeps a local deadline of TTL from the send time of its
// last successful write: the server's expiry can only come later, so a
// holder that cannot renew stops acting before anyone else can start.
// Leadership is as safe as that: a process paused for longer than TTL
// (stopped, swapped out) resumes believing it leads until its next renewal
// fails, and deleting or purging the key by hand lets a second leader start
// up to TTL/3 before the first notices.
type Leader struct {
	cfg     LeaderConfig
	kv      jetstream.KeyValue
	value   []byte
	logger  *slog.Logger
	gauge   prometheus.Gauge
	leading atomic.Bool
	running atomic.Bool
}

// NewLeader creates the bucket when it is missing (safe when several
// processes start at once) and checks that an existing one has the TTL as
// its MaxAge. It does not campaign: Run does.
func NewLeader(ctx context.Context, nc *nats.Conn, cfg LeaderConfig) (*Leader, error) {
	cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if nc == nil {
		return nil, errors.New("leader: no NATS connection")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("leader: open JetStream: %w", err)
	}
	kv, err := openLeaseBucket(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ordersync_leader",
		Help: "1 while this process holds the role's leadership, else 0.",
	}, []string{"role"})
	if err := collect.RegisterAll(cfg.Registerer, collect.Of(&gauge)); err != nil {
		return nil, fmt.Errorf("leader: register metrics: %w", err)
	}
	l := &Leader{
		cfg:    cfg,
		kv:     kv,
		value:  []byte(cfg.ID),
		logger: cfg.Logger.With("role", cfg.Name, "id", cfg.ID),
		gauge:  gauge.WithLabelValues(cfg.Name),
	}
	l.gauge.Set(0)
	return l, nil
}

// openLeaseBucket looks the bucket up and creates it when missing. Losing a
// creation race to another process only means looking it up again.
func openLeaseBucket(ctx context.Context, js jetstream.JetStream, cfg LeaderConfig) (jetstream.KeyValue, error) {
	var (
		kv jetstream.KeyValue
		st jetstream.KeyValueStatus
	)
	err := retryRace(ctx, createAttemptTimeout, func(ctx context.Context) error {
		var err error
		kv, err = js.KeyValue(ctx, cfg.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
				Bucket:      cfg.Bucket,
				Description: "ordersync: leader leases, one key per role",
				TTL:         cfg.TTL,
				Storage:     jetstream.FileStorage,
				Replicas:    cfg.Replicas,
			})
		}
		if err != nil {
			return err
		}
		st, err = kv.Status(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("leader: open bucket %s: %w", cfg.Bucket, err)
	}
	if st.TTL() != cfg.TTL {
		// A shorter MaxAge than the renewal interval would let two
		// processes lead at once: refuse rather than rewrite it.
		return nil, fmt.Errorf("leader: TTL %s differs from bucket %s's MaxAge %s; every leader sharing a bucket needs the same TTL", cfg.TTL, cfg.Bucket, st.TTL())
	}
	return kv, nil
}

// ID is this process's identity in the lease.
func (l *Leader) ID() string { return l.cfg.ID }

// IsLeader reports whether this process holds the lease now.
func (l *Leader) IsLeader() bool { return l.leading.Load() }

// Holder returns the ID of the process holding the lease, or "" when nobody
// does.
func (l *Leader) Holder(ctx context.Context) (string, error) {
	e, err := l.kv.Get(ctx, l.cfg.Name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("leader %s: read lease: %w", l.cfg.Name, err)
	}
	return string(e.Value()), nil
}

// Run campaigns until it holds the lease, then runs fn with a context that
// is cancelled the moment leadership is lost (its cause wraps
// ErrLeadershipLost) or ctx ends, and campaigns again after a loss. The
// lease is renewed until fn has returned, so a function that drains its
// work after ctx ends still leads while it does.
//
// Run returns nil when ctx ends; the error of fn when fn returns on its own
// while leading (nil included), after releasing the lease; or an error when
// the connection is closed for good.
func (l *Leader) Run(ctx context.Context, fn func(ctx context.Context) error) error {
	if !l.running.CompareAndSwap(false, true) {
		return ErrLeaderRunning
	}
	defer l.running.Store(false)
	for {
		rev, leaseEnd, err := l.campaign(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		err = l.lead(ctx, rev, leaseEnd, fn)
		if !errors.Is(err, ErrLeadershipLost) {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, nats.ErrConnectionClosed) {
			return fmt.Errorf("leader %s: %w", l.cfg.Name, err)
		}
	}
}

// renewInterval is how often the holder rewrites its lease, also the
// longest a renewal may take.
func (l *Leader) renewInterval() time.Duration { return l.cfg.TTL / 3 }

// campaignInterval spreads campaigners over TTL/6..TTL/3 so they do not
// knock in step.
func (l *Leader) campaignInterval() time.Duration {
	hi := l.cfg.TTL / 3
	return hi/2 + rand.N(hi/2+1)
}

// campaign tries to create the key until it succeeds. It returns the
// revision written and the local end of the lease.
func (l *Leader) campaign(ctx context.Context) (uint64, time.Time, error) {
	for {
		sent := time.Now()
		actx, cancel := context.WithTimeout(ctx, l.renewInterval())
		rev, err := l.kv.Create(actx, l.cfg.Name, l.value)
		cancel()
		switch {
		case err == nil:
			l.logger.Info("leadership acquired", "revision", rev)
			return rev, sent.Add(l.cfg.TTL), nil
		case ctx.Err() != nil:
			return 0, time.Time{}, ctx.Err()
		case errors.Is(err, nats.ErrConnectionClosed):
			return 0, time.Time{}, fmt.Errorf("leader %s: campaign: %w", l.cfg.Name, err)
		case errors.Is(err, jetstream.ErrKeyExists):
			// Someone else leads.
		default:
			l.logger.Warn("leader campaign failed", "err", err)
		}
		t := time.NewTimer(l.campaignInterval())
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, time.Time{}, ctx.Err()
		case <-t.C:
		}
	}
}

// lead runs fn while renewing the lease. It returns an error wrapping
// ErrLeadershipLost after a loss, else fn's result once the lease is
// released.
func (l *Leader) lead(ctx context.Context, rev uint64, leaseEnd time.Time, fn func(context.Context) error) error {
	l.setLeading(true)
	fnCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan error, 1)
	go func() { done <- fn(fnCtx) }()

	// Renewals go on after ctx ends, until fn has returned.
	opCtx := context.WithoutCancel(ctx)
	ticker := time.NewTicker(l.renewInterval())
	defer ticker.Stop()
	expiry := time.NewTimer(time.Until(leaseEnd))
	defer expiry.Stop()
	for {
		var lost error
		select {
		case fnErr := <-done:
			l.setLeading(false)
			l.release(opCtx, rev)
			if ctx.Err() != nil && (errors.Is(fnErr, context.Canceled) || errors.Is(fnErr, context.DeadlineExceeded)) {
				return nil
			}
			return fnErr
		case <-expiry.C:
			lost = fmt.Errorf("%w: lease of %s ran out before a renewal succeeded", ErrLeadershipLost, l.cfg.TTL)
		case <-ticker.C:
			sent := time.Now()
			rctx, rcancel := context.WithTimeout(opCtx, l.renewInterval())
			next, err := l.kv.Update(rctx, l.cfg.Name, l.value, rev)
			rcancel()
			if err != nil {
				lost = fmt.Errorf("%w: renew lease: %w", ErrLeadershipLost, err)
				break
			}
			rev = next
			expiry.Reset(time.Until(sent.Add(l.cfg.TTL)))
		}
		if lost != nil {
			l.setLeading(false)
			cancel(lost)
			l.logger.Warn("leadership lost", "err", lost)
			fnErr := <-done
			if fnErr != nil && !errors.Is(fnErr, context.Cause(fnCtx)) && !errors.Is(fnErr, context.Canceled) {
				l.logger.Warn("leader function returned after leadership was lost", "err", fnErr)
			}
			return lost
		}
	}
}

// release deletes the key if it is still this process's revision, so a
// campaigner need not wait for it to expire. A failure only delays the
// handover until the TTL.
func (l *Leader) release(ctx context.Context, rev uint64) {
	rctx, cancel := context.WithTimeout(ctx, l.renewInterval())
	defer cancel()
	if err := l.kv.Delete(rctx, l.cfg.Name, jetstream.LastRevision(rev)); err != nil {
		l.logger.Warn("leadership not released; it expires after the TTL", "err", err, "ttl", l.cfg.TTL)
		return
	}
	l.logger.Info("leadership released")
}

func (l *Leader) setLeading(v bool) {
	l.leading.Store(v)
	if v {
		l.gauge.Set(1)
	} else {
		l.gauge.Set(0)
	}
}
