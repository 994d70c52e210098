package worker

// WaitingFetchesForTest counts the fetches other than the reconciler's that
// are waiting for the upstream (the Retry-After gate, the rate limit) now.
func (s *Syncer) WaitingFetchesForTest() int64 { return s.foreground.count() }

// RateLimitForTest is the rate requests may leave at now, as the
// upstream's 429s left it; +Inf for none.
func (s *Syncer) RateLimitForTest() float64 { return s.rate.limit() }
