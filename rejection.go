package ordersync

import "time"

// RejectionReason says why a request was refused before it could be
// trusted: no valid signature, or a body too large to verify.
type RejectionReason string

// The reasons an unauthenticated request is refused.
const (
	RejectSignatureMissing RejectionReason = "signature_missing"
	RejectSignatureInvalid RejectionReason = "signature_invalid"
	RejectTooLarge         RejectionReason = "too_large"
	// RejectMalformed: a body that is not an event, from an account whose
	// webhooks are not signed (insecure mode).
	RejectMalformed RejectionReason = "malformed"
)

// RejectionSourceOther stands for the sources of a minute beyond the
// receiver's cap on distinct sources: their requests are counted under it.
const RejectionSourceOther = "other"

// RejectionCount is how many requests one source sent to one account in
// one minute that were refused for one reason. Unauthenticated requests are
// only counted this way, never logged one by one, so a flood of them costs
// a bounded number of rows.
type RejectionCount struct {
	Minute  time.Time // UTC, truncated to the minute
	Account string
	Source  string // the client's address, or RejectionSourceOther
	Reason  RejectionReason
	Count   int64
	// Last is when the last of them arrived.
	Last time.Time
}

// RecordRejectionsParams adds counts to the rejection record and bounds it.
type RecordRejectionsParams struct {
	// Counts are added to the counts already recorded for the same minute,
	// account, source and reason.
	Counts []RejectionCount
	// Before: counts of earlier minutes are deleted.
	Before time.Time
	// MaxRows: beyond it, the oldest rows are deleted.
	MaxRows int
}
