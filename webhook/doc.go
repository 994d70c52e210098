// Package webhook is the HTTP receiver of the payment link service's order
// webhooks. It verifies the HMAC signature over the raw body, parses the
// event tolerantly, and answers 2xx only after the event is durable in the
// queue (an ordersync.EventPublisher): 503 with Retry-After otherwise, so
// the provider retries and nothing it was told was received is lost.
//
// Answers: 200 {"status":"accepted"|"duplicate"|"ignored"}; 401 for a
// missing or wrong signature; 400 for a body that is not a usable JSON
// object; 413 for a body over the limit; 405 for anything but POST; 404 for
// an unknown account; 503 when the queue does not acknowledge in time.
// Events about other products and subscriptions are queued too, marked
// ignored, so the worker logs them durably without fetching anything; they
// are answered "ignored" even when the queue already held them. The queue
// deduplicates on MsgID, a hash of the account and the raw body, so a
// resent webhook is answered "duplicate" and stored once.
//
// Rejected requests (401, 400, 413) are never queued; they are written to
// the event log through an EventRecorder in the background, in batches,
// without ever making the handler wait.
package webhook
