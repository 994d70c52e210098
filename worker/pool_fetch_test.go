package worker

import (
	"context"
	"errors"
	"testing"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/fake"
	"github.com/ordersync/ordersync/internal/retry"
)

// refusingUpstream answers nothing: the test never sends a request.
type refusingUpstream struct{}

func (refusingUpstream) CreatePaymentLink(context.Context, ordersync.PaymentLinkParams) (*ordersync.PaymentLinkResult, error) {
	return nil, errors.New("not sent")
}

func (refusingUpstream) GetOrder(context.Context, string) (*ordersync.Order, error) {
	return nil, errors.New("not sent")
}

// TestRefusedFetchIsAnOutageWhateverTheStateNow: a fetch refused because
// the credentials were paused or the breaker open never uses up its
// event's attempts, even when a probe resumed fetching (or the breaker
// closed) before the failure is settled: under load the refused fetches
// of a pause are settled after the probe that ends it.
func TestRefusedFetchIsAnOutageWhateverTheStateNow(t *testing.T) {
	s, err := NewSyncer(SyncerConfig{Upstream: refusingUpstream{}, Mirror: fake.NewStore()})
	if err != nil {
		t.Fatal(err)
	}
	p := &Pool{cfg: PoolConfig{Accounts: Accounts{ordersync.DefaultAccount: s}}, syncer: s}
	if s.CredentialsPaused() || !s.BreakerClosed() {
		t.Fatal("a new syncer is paused or its breaker open")
	}
	for _, cause := range []error{ErrCredentialsRejected, ErrBreakerOpen} {
		f, upstream := p.fetchFailure(ordersync.DefaultAccount, &OutageError{Op: "fetch order X", Cause: cause})
		if f.Kind != retry.Outage || !upstream {
			t.Errorf("%v with fetching resumed: kind %v (upstream %v), want an outage", cause, f.Kind, upstream)
		}
	}
	// Retries run out while fetching flows: the order's own attempts count.
	f, _ := p.fetchFailure(ordersync.DefaultAccount, &OutageError{Op: "fetch order X", Cause: ErrRetriesExhausted})
	if f.Kind != retry.Transient {
		t.Errorf("retries exhausted with the breaker closed: kind %v, want transient", f.Kind)
	}
}
