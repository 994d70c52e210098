package queue

// Headers of a queued event besides Nats-Msg-Id, so a worker knows what the
// receiver knew without parsing anything but headers. The account is not
// among them: it is the subject's last token (releases before also wrote
// it in an Ordersync-Account header, always equal to the subject's).
const (
	// HeaderReceivedNanos is the receipt time in Unix nanoseconds, decimal:
	// read back with one integer parse, no calendar arithmetic.
	HeaderReceivedNanos = "Ordersync-Received-Unix-Nano"
	// HeaderReceivedAt is the receipt time as RFC 3339 text with
	// nanoseconds: read from events that carry it, never written.
	HeaderReceivedAt = "Ordersync-Received-At"
	HeaderSignature  = "Ordersync-Signature"
	HeaderIgnored    = "Ordersync-Ignored"
	HeaderReplayOf   = "Ordersync-Replay-Of"
	HeaderCause      = "Ordersync-Cause"
	// HeaderEvent is the body as the receiver parsed it
	// (ordersync.Event.Envelope), so the pool does not parse the body
	// again; absent from events queued by earlier releases, from replays
	// and from events one line cannot carry, whose body is parsed.
	HeaderEvent = "Ordersync-Event"
	// HeaderFromStatus is, on an order event, the status the change left.
	HeaderFromStatus = "Ordersync-From-Status"
	// HeaderAccount, HeaderOrderCode and HeaderStatus are, on an order
	// event, the account, the order code and the status the change reached,
	// as the payload says them; HeaderStatusChangeAt is where an HTTP
	// delivery's body puts its "statusChange" (a byte offset in the
	// payload). A dispatcher reads them instead of the payload when all four
	// are there; events published before carry none of them.
	HeaderAccount        = "Ordersync-Account"
	HeaderOrderCode      = "Ordersync-Order-Code"
	HeaderStatus         = "Ordersync-Status"
	HeaderStatusChangeAt = "Ordersync-Status-Change-At"
	// HeaderTraceParent is the W3C traceparent of the hop that published
	// the message, on events and order events alike; absent with tracing
	// off.
	HeaderTraceParent = "traceparent"
)
