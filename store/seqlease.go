package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// fetchSeqQuiet is how long after another process last took fetch numbers
// a process may take the sequence's lease: while several take numbers, a
// lease would only make each wait for the others'.
const fetchSeqQuiet = 10 * time.Second

// LeaseFetchSeq reserves n consecutive fetch sequence numbers for holder
// (one name per process) and returns the first. With them it may grant
// the sequence's lease: until is when it ends (zero when not granted), and
// until then no other process uses a number it takes, so the holder may
// hand out its reserved numbers without reading the sequence. A caller
// that finds another's lease running revokes it and must not use its
// numbers before wait, when that lease ends (zero: at once).
//
// The lease is granted (or renewed) when no other lease is running and
// either holder took the numbers last or nobody took any for
// fetchSeqQuiet. Every allocation of this release goes through here, so a
// lease cannot be passed unseen.
func (db *DB) LeaseFetchSeq(ctx context.Context, holder string, n int, ttl time.Duration) (first int64, until, wait time.Time, err error) {
	op := fmt.Sprintf("lease %d fetch sequence numbers", n)
	if n < 1 || holder == "" || ttl <= 0 {
		return 0, time.Time{}, time.Time{}, fmt.Errorf("%s: n, holder and ttl are required", op)
	}
	err = db.inTx(ctx, op, func(tx *sqlx.Tx) error {
		// The increment first: on SQLite it takes the write lock before
		// anything is read, and it returns the lease as it was.
		var (
			last      int64
			writer    string
			writtenAt *time.Time
			leaseOf   string
			leaseEnd  *time.Time
		)
		if err := tx.QueryRowxContext(ctx, db.rebind(`UPDATE fetch_sequence SET value = value + ? WHERE id = 1
RETURNING value, writer, written_at, lease_holder, lease_until`), n).Scan(&last, &writer, &writtenAt, &leaseOf, &leaseEnd); err != nil {
			return err
		}
		first = last - int64(n) + 1
		now := time.Now()
		holderNext, endNext := "", leaseEnd
		switch {
		case leaseEnd != nil && leaseEnd.After(now) && leaseOf != holder:
			// Another's lease, or one revoked that its holder may not
			// know of yet: it may still hand out lower numbers until it ends.
			wait = *leaseEnd
		case leaseOf == holder && leaseEnd != nil && leaseEnd.After(now),
			writer == holder,
			writtenAt == nil || now.Sub(*writtenAt) >= fetchSeqQuiet:
			until = now.Add(ttl)
			holderNext, endNext = holder, &until
		}
		var end any
		if endNext != nil {
			end = dbTime(*endNext)
		}
		_, err := tx.ExecContext(ctx, db.rebind(`UPDATE fetch_sequence SET writer = ?, written_at = ?, lease_holder = ?, lease_until = ? WHERE id = 1`),
			holder, dbTime(now), holderNext, end)
		return err
	})
	if err != nil {
		return 0, time.Time{}, time.Time{}, err
	}
	return first, until, wait, nil
}

// ReleaseFetchSeq ends holder's lease of the fetch sequence, if it still
// holds it, and clears its mark as the process that took numbers last: a
// process that stops (a CLI command, serve shutting down) hands out no
// more numbers, so the next one's reservation neither waits for the
// lease's end nor is refused the lease for fetchSeqQuiet. A lease another
// process revoked names no holder and is left to run out.
func (db *DB) ReleaseFetchSeq(ctx context.Context, holder string) error {
	op := "release the fetch sequence's lease"
	if holder == "" {
		return fmt.Errorf("%s: holder is required", op)
	}
	return db.inTx(ctx, op, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, db.rebind(`UPDATE fetch_sequence SET
lease_holder = CASE WHEN lease_holder = ? THEN '' ELSE lease_holder END,
lease_until = CASE WHEN lease_holder = ? THEN NULL ELSE lease_until END,
written_at = CASE WHEN writer = ? THEN NULL ELSE written_at END,
writer = CASE WHEN writer = ? THEN '' ELSE writer END
WHERE id = 1 AND (lease_holder = ? OR writer = ?)`), holder, holder, holder, holder, holder, holder)
		return err
	})
}
