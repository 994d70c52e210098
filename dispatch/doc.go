// Package dispatch delivers the order events the relay published to
// merchants' HTTP endpoints, signed as Standard Webhooks (package delivery):
// each endpoint reads the orders stream through its own durable consumer,
// receives an order's events in the order they were published (one lane
// per order, lanes.go), and has each event retried with Retry-After
// honoured, dead-lettered when refused or out of time, and disabled when it
// answers 410 Gone. How each delivery ended goes to the delivery log, in
// batches, before the event is acknowledged (log.go).
//
// When to retry, how long to wait and when to give up come from the one
// retry.Policy the worker's pool asks too (internal/retry), with the
// dispatcher's own schedule and window (attempt.go, RetrySchedule).
//
// The Dispatcher is built like every stage: New(Config) fills in what the
// config leaves out, then refuses a missing dependency or a bad value with
// an error naming the field ("dispatch: Config.Field is required"). Besides
// Run, it is the admin API's ordersync.Deliverer: Notify and Forget after a
// change to the endpoints, Ping, Replay and ReplayDeadLetter (admin.go).
package dispatch
