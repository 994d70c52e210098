package worker

import "context"

// WaitingFetchesForTest counts the fetches other than the reconciler's that
// are waiting for the upstream (the Retry-After gate, the rate limit) now.
func (s *Syncer) WaitingFetchesForTest() int64 { return s.foreground.count() }

// RateLimitForTest is the rate requests may leave at now, as the
// upstream's 429s left it; +Inf for none.
func (s *Syncer) RateLimitForTest() float64 { return s.rate.limit() }

// FetchHeldForTest is Fetch of a webhook whose wait at the rate limit,
// when it has one, starts only once held is closed, as the pool parks it:
// until then the fetch counts as waiting.
func (s *Syncer) FetchHeldForTest(ctx context.Context, code string, held <-chan struct{}) error {
	_, err := s.fetch(ctx, code, fetchOptions{park: func(ctx context.Context, wait func(context.Context) error) error {
		select {
		case <-held:
			return wait(ctx)
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	return err
}

// FetchLeavingForTest is Fetch of a webhook that calls leaving where its
// request is about to leave, after every wait, as the pool's round does.
func (s *Syncer) FetchLeavingForTest(ctx context.Context, code string, leaving func()) error {
	_, err := s.fetch(ctx, code, fetchOptions{leaving: leaving})
	return err
}
