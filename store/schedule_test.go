package store

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// nextCheckAt reads an order's next check; nil when it has none.
func nextCheckAt(t *testing.T, db *DB, code string) *time.Time {
	t.Helper()
	var due *time.Time
	if err := db.read.Get(&due, db.rebind(`SELECT next_check_at FROM orders WHERE account = ? AND order_code = ?`), ordersync.DefaultAccount, code); err != nil {
		t.Fatalf("read next_check_at of %s: %v", code, err)
	}
	if due != nil {
		u := due.UTC()
		due = &u
	}
	return due
}

// TestCheckScheduleFollowsActivity: the mirror keeps each order's next check
// as the domain's schedule says: activity (creation, a webhook, a fetched
// change) brings it near, quiet checks push it out, a final status takes
// the order off the schedule.
func TestCheckScheduleFollowsActivity(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		// Ahead of the wall clock, which stamps first_seen_at.
		t0 := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
		at := func(seq int64, offset time.Duration, status ordersync.Status, events ...ordersync.EventRecord) {
			t.Helper()
			p := fetched(orderDoc(t, "a", 1, status), seq, events...)
			p.FetchedAt = t0.Add(offset)
			apply(t, db, p)
		}
		want := func(step string, d time.Duration) {
			t.Helper()
			got := nextCheckAt(t, db, "a")
			if d < 0 {
				if got != nil {
					t.Errorf("%s: next check at t0%+v, want none", step, got.Sub(t0))
				}
				return
			}
			if got == nil || !got.Equal(t0.Add(d)) {
				t.Errorf("%s: next check at %v, want t0%+v", step, got, d)
			}
		}
		at(1, 0, ordersync.StatusPending)
		want("created", ordersync.FirstCheckAfter("a"))
		at(2, 10*time.Minute, ordersync.StatusPending)
		want("quiet check 10m after creation", 10*time.Minute+ordersync.CheckActiveInterval)
		at(3, 30*time.Minute, ordersync.StatusPending)
		want("quiet check 30m after creation", 30*time.Minute+ordersync.CheckActiveInterval)
		at(4, 2*time.Hour, ordersync.StatusPending)
		want("quiet check 2h after creation", 2*time.Hour+ordersync.CheckMaxInterval)
		at(5, 3*time.Hour, ordersync.StatusPending, ordersync.EventRecord{MsgID: "m1", ReceivedAt: t0.Add(3 * time.Hour), Type: ordersync.EventUpdated})
		want("a webhook", 3*time.Hour+ordersync.FirstCheckAfter("a"))
		at(6, 5*time.Hour, ordersync.StatusPending, ordersync.EventRecord{MsgID: "m2", ReceivedAt: t0.Add(5*time.Hour - 10*time.Minute), Type: ordersync.EventPaymentError})
		want("a payment error 10m ago", 5*time.Hour+ordersync.CheckInFlightInterval)
		at(7, 8*time.Hour, ordersync.StatusPaid)
		want("a fetched change", 8*time.Hour+ordersync.FirstCheckAfter("a"))
		at(8, 9*time.Hour, ordersync.StatusPaid)
		want("quiet check 1h after the change", 9*time.Hour+ordersync.CheckMaxInterval)
		at(9, 10*time.Hour, ordersync.StatusFinalized)
		want("finalized", -1)
		due, err := db.ClaimDueChecks(context.Background(), ordersync.DefaultAccount, t0.Add(1000*time.Hour), 10, t0)
		if err != nil || len(due) != 0 {
			t.Errorf("a finalized order was claimed: %v, %v", due, err)
		}
	})
}

// TestClaimDueChecks: claims take the most overdue orders of the account
// first, at most the limit, and move them to the retry time; the schedule
// is in the database, so a process that opens it again sees the same.
func TestClaimDueChecks(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		t0 := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
		// Order i was created at t0 + 5i minutes: first due between 1 and 4
		// minutes later (ordersync.FirstCheckAfter), so in the order of i.
		for i, code := range []string{"c0", "c1", "c2", "c3", "c4"} {
			p := fetched(orderDoc(t, code, i+1, ordersync.StatusPending), int64(i+1))
			p.FetchedAt = t0.Add(time.Duration(5*i) * time.Minute)
			apply(t, db, p)
		}
		gone := fetched(orderDoc(t, "gone", 9, ordersync.StatusCancelled), 9)
		gone.FetchedAt = t0
		apply(t, db, gone)
		other := fetched(orderDoc(t, "x", 10, ordersync.StatusPending), 10)
		other.Account, other.FetchedAt = "other", t0
		apply(t, db, other)
		if err := db.RecordOrderRef(ctx, ordersync.OrderRef{Account: ordersync.DefaultAccount, Code: "placeholder"}); err != nil {
			t.Fatal(err)
		}
		if got := nextCheckAt(t, db, "placeholder"); got == nil || got.Sub(time.Now()) > ordersync.CheckFirstFetch {
			t.Errorf("a recorded placeholder is due at %v, want within %s", got, ordersync.CheckFirstFetch)
		}

		now := t0.Add(15*time.Minute + ordersync.CheckActiveInterval + 30*time.Second) // c0..c3 are due
		backlog, err := db.CheckBacklog(ctx, ordersync.DefaultAccount, now)
		if err != nil {
			t.Fatal(err)
		}
		// The placeholder, due within 15s of the wall clock, is overdue too.
		if backlog.Due != 5 || !backlog.Oldest.Before(t0.Add(ordersync.CheckFirstFetch+time.Second)) {
			t.Errorf("backlog %+v, want 5 due, the oldest at or before t0+15s", backlog)
		}

		// The database is opened again, as after a restart.
		db.Close()
		db = openDB(t, url)
		retry := now.Add(time.Minute)
		claim := func(limit int) []string {
			t.Helper()
			due, err := db.ClaimDueChecks(ctx, ordersync.DefaultAccount, now, limit, retry)
			if err != nil {
				t.Fatal(err)
			}
			var codes []string
			for _, c := range due {
				codes = append(codes, c.Code)
				if c.Due.After(now) {
					t.Errorf("claimed %s due at %v, after now", c.Code, c.Due)
				}
			}
			return codes
		}
		if got := claim(3); !slices.Equal(got, []string{"placeholder", "c0", "c1"}) {
			t.Errorf("first claim %q, want the most overdue: placeholder, c0, c1", got)
		}
		if got := claim(10); !slices.Equal(got, []string{"c2", "c3"}) {
			t.Errorf("second claim %q, want the rest due: c2, c3", got)
		}
		if got := claim(10); len(got) != 0 {
			t.Errorf("third claim %q, want none: the claimed ones wait for their retry", got)
		}
		if got := nextCheckAt(t, db, "c0"); got == nil || !got.Equal(retry) {
			t.Errorf("claimed c0 is due again at %v, want the retry time %v", got, retry)
		}
		backlog, err = db.CheckBacklog(ctx, ordersync.DefaultAccount, now)
		if err != nil || backlog.Due != 0 || !backlog.Oldest.IsZero() {
			t.Errorf("backlog after claiming %+v, %v; want none", backlog, err)
		}
	})
}

// TestTightenChecks: evidence of lost webhooks recorded for an account
// brings its orders active since the evidence's window to the dense
// schedule at once, every later fetch of them schedules densely while the
// evidence holds (the store reads it on apply), a claim carries it, other
// accounts are untouched, and the schedule relaxes once it expires.
func TestTightenChecks(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		t0 := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
		at := func(seq int64, offset time.Duration) {
			t.Helper()
			p := fetched(orderDoc(t, "a", 1, ordersync.StatusPending), seq)
			p.FetchedAt = t0.Add(offset)
			apply(t, db, p)
		}
		want := func(step string, d time.Duration) {
			t.Helper()
			if got := nextCheckAt(t, db, "a"); got == nil || !got.Equal(t0.Add(d)) {
				t.Errorf("%s: next check at %v, want t0%+v", step, got, d)
			}
		}
		at(1, 0)
		want("created, clean record", ordersync.FirstCheckAfter("a"))
		// Evidence found 5 s after creation, with the default window and
		// hold (the hour before it, for an hour): the order was active
		// within the window, so its check comes to the dense schedule's
		// first, 15 s after the activity, instead of the active tier's
		// spread one (a minute or more after it).
		now := t0.Add(5 * time.Second)
		dense := ordersync.DenseChecks{Since: now.Add(-ordersync.CheckActiveWindow), Until: now.Add(time.Hour)}
		n, err := db.TightenChecks(ctx, ordersync.DefaultAccount, dense, now)
		if err != nil || n != 1 {
			t.Fatalf("TightenChecks = %d, %v; want 1 order brought nearer", n, err)
		}
		want("tightened 5 s after activity", ordersync.CheckDenseFirst)
		if got, err := db.DenseChecks(ctx, ordersync.DefaultAccount); err != nil || !got.Until.Equal(dense.Until) {
			t.Errorf("DenseChecks = %+v, %v; want until %v", got, err, dense.Until)
		}
		if got, _ := db.DenseChecks(ctx, "other"); got != (ordersync.DenseChecks{}) {
			t.Errorf("another account's record = %+v, want none", got)
		}
		at(2, 20*time.Minute)
		want("a quiet fetch while dense", 20*time.Minute+ordersync.CheckActiveInterval)
		due, err := db.ClaimDueChecks(ctx, ordersync.DefaultAccount, t0.Add(25*time.Minute), 10, t0.Add(26*time.Minute))
		if err != nil || len(due) != 1 || due[0].State.Dense != dense {
			t.Fatalf("claim = %+v, %v; want the order with the account's evidence", due, err)
		}
		if r := ordersync.DueReason(due[0].State, t0.Add(25*time.Minute)); r != ordersync.CheckEvidence {
			t.Errorf("a dense check is due for %q, want %q", r, ordersync.CheckEvidence)
		}
		at(3, 3*time.Hour)
		want("once the evidence expired", 3*time.Hour+ordersync.CheckMaxInterval)
	})
}

// TestBackdateOrders: the times the schedule reads as activity move back
// by the given duration for the account's orders alone, so a claim sees
// the order as active that much earlier and a pull of the orders active
// since between the two times finds it no more.
func TestBackdateOrders(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		t0 := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
		for i, account := range []string{ordersync.DefaultAccount, "other"} {
			p := fetched(orderDoc(t, "a", 1, ordersync.StatusPending), int64(i+1),
				ordersync.EventRecord{MsgID: "m" + account, ReceivedAt: t0, Type: ordersync.EventUpdated})
			p.Account, p.FetchedAt = account, t0
			apply(t, db, p)
		}
		// Each claim is an hour after the last one's retry time.
		claims := 0
		activeAt := func(account string) time.Time {
			t.Helper()
			claims++
			now := t0.Add(time.Duration(100+2*claims) * time.Hour)
			due, err := db.ClaimDueChecks(ctx, account, now, 10, now.Add(time.Hour))
			if err != nil || len(due) != 1 {
				t.Fatalf("claim of %s = %+v, %v; want the one order", account, due, err)
			}
			return due[0].State.ActiveAt
		}
		before := activeAt(ordersync.DefaultAccount)
		if n, err := db.BackdateOrders(ctx, ordersync.DefaultAccount, 3*time.Hour); err != nil || n != 1 {
			t.Fatalf("BackdateOrders = %d, %v; want 1 order moved", n, err)
		}
		if got := activeAt(ordersync.DefaultAccount); !got.Equal(before.Add(-3 * time.Hour)) {
			t.Errorf("backdated order active at %v, want %v", got, before.Add(-3*time.Hour))
		}
		if got := activeAt("other"); !got.Equal(before) {
			t.Errorf("another account's order active at %v, want %v untouched", got, before)
		}
		codes, err := db.PullChecks(ctx, ordersync.DefaultAccount, before.Add(-2*time.Hour), t0, time.Minute, 0)
		if err != nil || len(codes) != 0 {
			t.Errorf("PullChecks of the orders active in the 2 hours before = %q, %v; want none", codes, err)
		}
	})
}
