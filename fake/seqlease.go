package fake

import (
	"context"
	"fmt"
	"time"
)

// fetchSeqQuiet is store.DB's: how long after another process last took
// fetch numbers a process may take the sequence's lease.
const fetchSeqQuiet = 10 * time.Second

// seqLease is the fetch sequence's lease as store.DB keeps it beside the
// sequence: who took numbers last and when, and who holds the lease until
// when (a revoked lease keeps its end and names no holder).
type seqLease struct {
	writer    string
	writtenAt time.Time
	holder    string
	until     time.Time
}

// LeaseFetchSeq reserves n numbers for holder and grants or refuses the
// sequence's lease by store.DB's rules.
func (s *Store) LeaseFetchSeq(_ context.Context, holder string, n int, ttl time.Duration) (first int64, until, wait time.Time, err error) {
	if n < 1 || holder == "" || ttl <= 0 {
		return 0, time.Time{}, time.Time{}, fmt.Errorf("lease %d fetch sequence numbers: n, holder and ttl are required", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq += int64(n)
	first = s.seq - int64(n) + 1
	at, l := now(), &s.seqLease
	running := l.until.After(at)
	nextHolder := ""
	switch {
	case running && l.holder != holder:
		wait = l.until
	case running && l.holder == holder, l.writer == holder, l.writtenAt.IsZero() || at.Sub(l.writtenAt) >= fetchSeqQuiet:
		until = dbTime(at.Add(ttl))
		nextHolder, l.until = holder, until
	}
	l.writer, l.writtenAt, l.holder = holder, at, nextHolder
	return first, until, wait, nil
}

// ReleaseFetchSeq ends holder's lease and clears its mark as the last to
// take numbers, as store.DB does.
func (s *Store) ReleaseFetchSeq(_ context.Context, holder string) error {
	if holder == "" {
		return fmt.Errorf("release the fetch sequence's lease: holder is required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := &s.seqLease
	if l.holder == holder {
		l.holder, l.until = "", time.Time{}
	}
	if l.writer == holder {
		l.writer, l.writtenAt = "", time.Time{}
	}
	return nil
}
