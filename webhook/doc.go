// Package webhook is the HTTP receiver of the payment link service's order
// webhooks. It verifies the HMAC signature over the raw body, parses the
// event tolerantly, and answers 2xx only after the event is durable in the
// queue (an ordersync.EventPublisher): 503 with Retry-After otherwise, so
// the provider retries and nothing it was told was received is lost.
//
// Answers: 200 {"status":"accepted"|"duplicate"|"ignored"}; 401 for a
// missing or wrong signature; 400 for a body that is not a usable JSON
// object; 413 for a body over the limit; 405 for anything but POST; 404 for
// an unknown account; 503 when the queue does not acknowledge in time, or
// when too many large bodies are in flight ("busy").
// Events about other products and subscriptions are queued too, marked
// ignored, so the worker logs them durably without fetching anything; they
// are answered "ignored" even when the queue already held them. The queue
// deduplicates on MsgID, a hash of the account and the raw body, so a
// resent webhook is answered "duplicate" and stored once.
//
// Rejected requests (401, 400, 413) are never queued. Those refused before
// they could be trusted (no valid signature, too large) cost no row each:
// they are counted per minute, account, source and reason in a bounded
// record (RejectionRecorder) and summed up in a rate-limited WARN line. A
// signed body that is not an event is written to the event log through an
// EventRecorder. Both are written in the background, never making the
// handler wait. Bodies are read into buffers that grow as bytes arrive,
// within a budget of bytes in flight (503 busy when it is spent).
//
// A running receiver records its uptime and the counts of its answers in
// the mirror (Heartbeat), so that a reconciler in any process knows when no
// receiver was listening.
package webhook
