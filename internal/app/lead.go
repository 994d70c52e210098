package app

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/ordersync/ordersync/queue"
)

// lead runs a stage of which only one may act at a time across processes
// (the outbox relay, the dispatcher, the reconciler, the pruner): on an
// external NATS it runs only while
// this process holds the role's lease, and campaigns otherwise; a holder
// that dies loses the lease after its TTL. With embedded NATS there is one
// process, so it just runs.
func (p *Program) lead(ctx context.Context, role string, run func(context.Context) error) error {
	if p.embedded != nil {
		return run(ctx)
	}
	// The lease bucket may not be reachable yet (NATS restarting, a
	// cluster electing): keep trying rather than take the process down.
	// The waits are jittered, so processes that lost NATS together do not
	// all campaign in the same instant when it comes back.
	var l *queue.Leader
	err := backoff.RetryNotify(func() error {
		var err error
		l, err = queue.NewLeader(ctx, p.nc, queue.LeaderConfig{
			Bucket: p.cfg.NATSNamespace + "_leaders", Name: role, Replicas: p.cfg.NATSReplicas, TTL: p.cfg.LeaderTTL,
			Registerer: p.reg, Logger: p.logger.With("component", "leader"),
		})
		return err
	}, backoff.WithContext(leaderRetry(), ctx), func(err error, wait time.Duration) {
		p.logger.Error("leader election unavailable; retrying", "role", role, "retry_in", wait, "err", err)
	})
	if err != nil {
		return nil // only the context ends the retries
	}
	return l.Run(ctx, run)
}

// leaderRetry is the schedule of campaigns for a lease that cannot be
// reached: from a second, doubling to 30 s, jittered by half, never giving up.
func leaderRetry() *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(backoff.WithInitialInterval(time.Second),
		backoff.WithMaxInterval(30*time.Second), backoff.WithMaxElapsedTime(0))
}
