package store

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestReceiverBeats: a receiver's beats are one row per receiver and
// account, updated in place, listed by start, and pruned by age.
func TestReceiverBeats(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		t0 := time.Now().UTC().Truncate(time.Second)
		beat := func(id, account string, started, at time.Time, c ordersync.WebhookCounts) {
			t.Helper()
			if err := db.RecordReceiverBeats(ctx, []ordersync.ReceiverBeat{{ReceiverID: id, Account: account, StartedAt: started, BeatAt: at, WebhookCounts: c}}); err != nil {
				t.Fatal(err)
			}
		}
		beat("old", "default", t0.Add(-30*time.Hour), t0.Add(-25*time.Hour), ordersync.WebhookCounts{})
		beat("r2", "default", t0.Add(-time.Minute), t0, ordersync.WebhookCounts{Accepted: 1})
		beat("r1", "default", t0.Add(-2*time.Hour), t0.Add(-time.Hour), ordersync.WebhookCounts{Accepted: 1})
		beat("r1", "default", t0.Add(-2*time.Hour), t0.Add(-10*time.Minute), ordersync.WebhookCounts{Accepted: 5, Unavailable: 2, Refused: 3})
		beat("r1", "other", t0.Add(-2*time.Hour), t0, ordersync.WebhookCounts{})
		got, err := db.ListReceiverBeats(ctx, "default", t0.Add(-3*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		want := []ordersync.ReceiverBeat{
			{ReceiverID: "r1", Account: "default", StartedAt: t0.Add(-2 * time.Hour), BeatAt: t0.Add(-10 * time.Minute), WebhookCounts: ordersync.WebhookCounts{Accepted: 5, Unavailable: 2, Refused: 3}},
			{ReceiverID: "r2", Account: "default", StartedAt: t0.Add(-time.Minute), BeatAt: t0, WebhookCounts: ordersync.WebhookCounts{Accepted: 1}},
		}
		if !slices.EqualFunc(got, want, func(a, b ordersync.ReceiverBeat) bool {
			return a.ReceiverID == b.ReceiverID && a.Account == b.Account && a.StartedAt.Equal(b.StartedAt) && a.BeatAt.Equal(b.BeatAt) && a.WebhookCounts == b.WebhookCounts
		}) {
			t.Errorf("beats %+v, want %+v", got, want)
		}
		if n, err := db.PruneReceiverBeats(ctx, t0.Add(-24*time.Hour)); err != nil || n != 1 {
			t.Errorf("pruned %d, %v; want the one beat older than a day", n, err)
		}
	})
}

// TestPullChecks: the checks of the open orders active since a time are
// due now, most recently active first, at most a limit of them; orders
// quieter for longer, past the limit and final ones keep theirs, and PullCheck only ever brings a check nearer.
func TestPullChecks(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		// Ahead of the wall clock, which stamps when each order was first
		// seen, by more than the window.
		t0 := time.Now().UTC().Add(6 * time.Hour).Truncate(time.Second)
		for i, c := range []struct {
			code   string
			ago    time.Duration
			status ordersync.Status
		}{
			{"old", 5 * time.Hour, ordersync.StatusPending},
			{"mid", 90 * time.Minute, ordersync.StatusPending},
			{"recent", 70 * time.Minute, ordersync.StatusPaid},
			{"done", 80 * time.Minute, ordersync.StatusFinalized},
		} {
			// Active (fetched changed) ago, and checked unchanged a minute
			// ago: each is next due later than t0.
			p := fetched(orderDoc(t, c.code, i+1, c.status), int64(i+1))
			p.FetchedAt = t0.Add(-c.ago)
			apply(t, db, p)
			p.Seq, p.FetchedAt = int64(10+i), t0.Add(-time.Minute)
			apply(t, db, p)
		}
		codes, err := db.PullChecks(ctx, ordersync.DefaultAccount, t0.Add(-2*time.Hour), t0, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(codes, []string{"recent"}) {
			t.Errorf("pulled %q with a limit of 1, want recent, the most recently active", codes)
		}
		if got := nextCheckAt(t, db, "mid"); got == nil || !got.After(t0) {
			t.Errorf("mid is due at %v with a limit of 1, want after %v: past the limit", got, t0)
		}
		codes, err = db.PullChecks(ctx, ordersync.DefaultAccount, t0.Add(-2*time.Hour), t0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(codes, []string{"recent", "mid"}) {
			t.Errorf("pulled %q, want recent, mid", codes)
		}
		due, err := db.ClaimDueChecks(ctx, ordersync.DefaultAccount, t0, 10, t0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		var claimed []string
		for _, d := range due {
			claimed = append(claimed, d.Code)
		}
		if !slices.Equal(claimed, []string{"recent", "mid"}) {
			t.Errorf("claimed %q, want the pulled ones, most recently active first", claimed)
		}
		if got := nextCheckAt(t, db, "old"); got == nil || !got.After(t0) {
			t.Errorf("old is due at %v, want after %v: active before the window", got, t0)
		}
		if err := db.PullCheck(ctx, ordersync.DefaultAccount, "mid", t0.Add(30*time.Second)); err != nil {
			t.Fatal(err)
		}
		if got := nextCheckAt(t, db, "mid"); got == nil || !got.Equal(t0.Add(30*time.Second)) {
			t.Errorf("mid is due at %v, want pulled to t0+30s", got)
		}
		if err := db.PullCheck(ctx, ordersync.DefaultAccount, "mid", t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if got := nextCheckAt(t, db, "mid"); got == nil || !got.Equal(t0.Add(30*time.Second)) {
			t.Errorf("mid is due at %v, want still t0+30s: a pull never pushes a check out", got)
		}
	})
}
