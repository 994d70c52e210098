package worker_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/worker"
)

// refusingAccount is an account's upstream that answers every request with
// the same failure.
type refusingAccount struct {
	err  *ordersync.UpstreamError
	gets atomic.Int64
}

func (u *refusingAccount) CreatePaymentLink(context.Context, ordersync.PaymentLinkParams) (*ordersync.PaymentLinkResult, error) {
	return nil, u.err
}

func (u *refusingAccount) GetOrder(context.Context, string) (*ordersync.Order, error) {
	u.gets.Add(1)
	return nil, u.err
}

// TestOneAccountsGateHoldsNoOther: an account whose service answers 429
// (with a long Retry-After, or without one, so its rate is lowered) or
// rejects the key is held back or paused alone. The other account's
// webhook, queued behind more of the refused account's events than the
// pool runs fetches at once, is mirrored well before the refused
// account's gate opens.
func TestOneAccountsGateHoldsNoOther(t *testing.T) {
	t.Parallel()
	for name, refusal := range map[string]*ordersync.UpstreamError{
		"retry-after": {Kind: ordersync.UpstreamRateLimited, StatusCode: 429, RetryAfter: time.Minute},
		"rate":        {Kind: ordersync.UpstreamRateLimited, StatusCode: 429},
		"credentials": {Kind: ordersync.UpstreamUnauthorized, StatusCode: 401},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, sim.Faults{})
			writer, err := worker.NewMirrorWriter(worker.MirrorWriterConfig{Mirror: e.db, Registerer: e.reg})
			if err != nil {
				t.Fatal(err)
			}
			refused := &refusingAccount{err: refusal}
			busy := e.newSyncer(t, refused, func(c *worker.SyncerConfig) {
				c.Writer = writer
				c.Retry.MaxElapsed = time.Minute
				c.RateFloor = 0.1
				c.CredentialsProbeInterval = time.Minute
			})
			def := e.newSyncer(t, nil, func(c *worker.SyncerConfig) { c.Writer = writer })

			const fetches = 2
			var evs []*ordersync.InboundEvent
			for i := range 4 * fetches {
				ev := e.event(fmt.Appendf(nil, `{"orderCode":"BUSY%03d","orderType":"FASTLINK_CHARGE","type":"Created"}`, i))
				ev.Account = "busy"
				evs = append(evs, ev)
			}
			e.publish(t, evs...)
			mine := e.createOrders(t, 1)[0]
			e.publish(t, e.webhook(mine.OrderID, ordersync.EventCreated))
			e.startPool(t, def, func(c *worker.PoolConfig) {
				c.Accounts = worker.Accounts{ordersync.DefaultAccount: def, "busy": busy}
				c.FetchConcurrency = fetches
				c.DrainTimeout = 100 * time.Millisecond
			})
			waitFor(t, 10*time.Second, "the other account's order mirrored", func() bool {
				_, err := e.db.FindOrderByCode(context.Background(), ordersync.DefaultAccount, mine.OrderCode)
				return err == nil
			})
			if refused.gets.Load() == 0 {
				t.Error("the refused account's service was never asked")
			}
		})
	}
}
