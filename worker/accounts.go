package worker

import (
	"github.com/ordersync/ordersync"
)

// ErrUnknownAccount is an event or request for an account this deployment
// does not serve: a permanent failure. It is ordersync.ErrUnknownAccount.
var ErrUnknownAccount = ordersync.ErrUnknownAccount

// Accounts routes each merchant account to its own Syncer: its own upstream
// base URL and key, and so its own breaker, rate limit, Retry-After gate and
// credentials pause. One account's rejected key or outage never pauses
// another's. Every stage that serves several accounts (the pool, the
// follower, the replayer) takes the deployment's one Accounts and routes
// through its For, so an account not served fails the same way everywhere.
type Accounts = ordersync.Accounts[*Syncer]
