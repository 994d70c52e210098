// Package worker turns queued webhook events into mirrored orders: it
// resolves each event to an order code, fetches the authoritative order
// detail from the payment link service, and writes it to the mirror.
//
// The Syncer is the one way to fetch and apply an order. It owns everything
// that protects the upstream: the fetch sequence that keeps the mirror from
// moving backwards, retries with jittered exponential backoff, the shared
// Retry-After gate, the rate limit, the circuit breaker and the pause on
// rejected credentials.
//
// The Pool consumes the queue. It coalesces events for the same order into
// at most one fetch in flight plus one follow-up, commits fetched orders in
// groups, and settles every queued event exactly once: Ack only after the mirror
// committed, Retry for transient failures and outages, Term after a dead
// letter for permanent ones. When to retry, how long to wait and when to
// give up is the one retry.Policy (internal/retry), which the dispatcher
// (package dispatch) asks as well.
//
// Every stage is built the same way: NewX(XConfig) fills in what the
// config leaves out (withDefaults), then refuses a missing dependency or a
// bad value with an error naming the field ("worker: XConfig.Field is
// required"). Accounts routes each account to its Syncer; the pool, the
// follower and the replayer share the deployment's one, so an account it
// does not serve fails the same way on each (ErrUnknownAccount).
package worker
