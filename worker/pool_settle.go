package worker

// Settling deliveries: ack after the commit, a delayed redelivery for what
// is transient, a dead letter for what is permanent, and extending the ones
// held long.

import (
	"context"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/retry"
)

// deadLetter records a permanent failure and terminates the queued event.
// If the dead letter cannot be written, the event is retried instead: the
// event must stay somewhere.
func (p *Pool) deadLetter(ctx context.Context, it *item, reason ordersync.DeadLetterReason, cause error) {
	dl := ordersync.DeadLetter{
		MsgID:     it.ev.MsgID,
		Account:   it.account,
		Reason:    reason,
		Attempts:  it.qe.Attempt(),
		LastError: cause.Error(),
		OrderCode: it.code,
		Body:      it.ev.Body,
		Headers:   eventHeaders(it.ev),
		CreatedAt: p.now(),
	}
	if it.e != nil {
		dl.OrderID, dl.OrderReference = it.e.OrderID, it.e.OrderReference
	}
	if _, err := p.mirror.AddDeadLetter(ctx, dl); err != nil {
		p.log.Error("record dead letter failed; event will be retried", "msg_id", it.ev.MsgID, "reason", reason, "err", err)
		p.retryLater(it)
		return
	}
	p.metrics.deadLetters.WithLabelValues(string(reason)).Inc()
	p.log.Warn("event dead-lettered", "msg_id", it.ev.MsgID, "reason", reason,
		"order_id", dl.OrderID, "order_code", dl.OrderCode, "attempts", dl.Attempts, "err", cause)
	if err := it.qe.Term(); err != nil {
		p.log.Warn("terminate dead-lettered event failed; it may be delivered again", "msg_id", it.ev.MsgID, "err", err)
	}
	p.settled()
}

func (p *Pool) ack(it *item) {
	// Acknowledging what is committed must not depend on the drain's
	// context: the commit happened.
	if err := it.qe.Ack(context.Background()); err != nil {
		p.log.Warn("ack event failed; it will be redelivered and applied again harmlessly", "msg_id", it.ev.MsgID, "err", err)
	}
	p.settled()
}

func (p *Pool) retry(it *item, delay time.Duration) {
	if err := it.qe.Retry(delay); err != nil {
		p.log.Warn("retry event failed; it will be redelivered after the ack wait", "msg_id", it.ev.MsgID, "err", err)
	}
	p.settled()
}

func (p *Pool) settled() {
	p.room.Release(1)
	p.unsettled.Done()
}

// settleFailed settles a queued event whose work failed as policy decides for
// its attempt: redelivered after a wait, or dead-lettered with cause.
func (p *Pool) settleFailed(ctx context.Context, it *item, policy *retry.Policy, f retry.Failure, cause error) {
	d := policy.Decide(it.qe.Attempt(), 0, f)
	if d.Retry {
		p.retry(it, d.After)
		return
	}
	p.deadLetter(ctx, it, ordersync.DeadLetterReason(d.Reason), cause)
}

// retryLater redelivers an event after a failure of the mirror itself,
// which says nothing about the event and never dead-letters it.
func (p *Pool) retryLater(it *item) {
	p.retry(it, p.retries.Decide(it.qe.Attempt(), 0, retry.Failure{Kind: retry.Outage}).After)
}

// extendLoop tells the queue that events held longer than ExtendInterval
// are still being worked on.
func (p *Pool) extendLoop(ctx context.Context) {
	t := time.NewTicker(p.cfg.ExtendInterval)
	defer t.Stop()
	var held []*item
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cutoff := p.now().Add(-p.cfg.ExtendInterval)
		held = held[:0]
		p.mu.Lock()
		for _, f := range p.flights {
			for _, its := range [][]*item{f.cur.items, f.next} {
				for _, it := range its {
					if it.pulledAt.Before(cutoff) {
						held = append(held, it)
					}
				}
			}
		}
		p.mu.Unlock()
		for _, it := range held {
			if err := it.qe.Extend(); err != nil {
				p.log.Debug("extend event failed", "msg_id", it.ev.MsgID, "err", err)
			}
		}
	}
}
