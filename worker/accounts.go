package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ordersync/ordersync"
)

// ErrUnknownAccount is an event or request for an account this deployment
// does not serve: a permanent failure.
var ErrUnknownAccount = errors.New("unknown account")

// Accounts routes each merchant account to its own Syncer: its own upstream
// base URL and key, and so its own breaker, rate limit, Retry-After gate and
// credentials pause. One account's rejected key or outage never pauses
// another's.
type Accounts map[string]*Syncer

// Syncer returns the account's Syncer.
func (a Accounts) Syncer(account string) (*Syncer, error) {
	if s, ok := a[account]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("account %q: %w", account, ErrUnknownAccount)
}

// SyncOrder fetches and mirrors an order of the account.
func (a Accounts) SyncOrder(ctx context.Context, account, code string, cause ordersync.Cause) (ordersync.ApplyResult, error) {
	s, err := a.Syncer(account)
	if err != nil {
		return ordersync.ApplyResult{}, err
	}
	return s.SyncOrder(ctx, account, code, cause)
}

// UpstreamWait is what remains of the account's Retry-After gate; zero for
// an account it does not serve.
func (a Accounts) UpstreamWait(account string) time.Duration {
	if s, ok := a[account]; ok {
		return s.GateWait()
	}
	return 0
}
