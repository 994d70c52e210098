package worker

// WaitingFetchesForTest counts the fetches other than the reconciler's that
// are waiting for the upstream (the Retry-After gate, the rate limit) now.
func (s *Syncer) WaitingFetchesForTest() int64 { return s.foreground.Load() }
