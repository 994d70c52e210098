package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestRecordRejectionsBounded: counts of one minute, account, source and
// reason add up in one row; expired minutes go; and however many sources
// arrive, the record keeps at most MaxRows rows, the newest.
func TestRecordRejectionsBounded(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		base := time.Date(2026, 10, 10, 18, 0, 0, 0, time.UTC)
		count := func(minute int, source string, n int64) ordersync.RejectionCount {
			m := base.Add(time.Duration(minute) * time.Minute)
			return ordersync.RejectionCount{Minute: m, Account: "default", Source: source,
				Reason: ordersync.RejectSignatureInvalid, Count: n, Last: m.Add(time.Duration(n) * time.Second)}
		}
		record := func(before time.Time, maxRows int, counts ...ordersync.RejectionCount) {
			t.Helper()
			if err := db.RecordRejections(ctx, ordersync.RecordRejectionsParams{Counts: counts, Before: before, MaxRows: maxRows}); err != nil {
				t.Fatalf("RecordRejections: %v", err)
			}
		}
		record(time.Time{}, 100, count(0, "192.0.2.1", 3), count(0, "192.0.2.2", 1))
		record(time.Time{}, 100, count(0, "192.0.2.1", 4))
		got, err := db.ListRejections(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Source != "192.0.2.1" || got[0].Count != 7 || !got[0].Minute.Equal(base) ||
			!got[0].Last.Equal(base.Add(4*time.Second)) || got[0].Reason != ordersync.RejectSignatureInvalid {
			t.Fatalf("after adding: %+v", got)
		}

		// 30 minutes of 10 sources each, with room for 25 rows: the
		// newest minutes stay, whole, and never more than 25 rows.
		for m := 1; m <= 30; m++ {
			var counts []ordersync.RejectionCount
			for s := range 10 {
				counts = append(counts, count(m, fmt.Sprintf("198.51.100.%d", s), 1))
			}
			record(time.Time{}, 25, counts...)
			if got, err = db.ListRejections(ctx); err != nil || len(got) > 25 {
				t.Fatalf("minute %d: %d rows (%v), want at most 25", m, len(got), err)
			}
		}
		if len(got) != 20 || !got[0].Minute.Equal(base.Add(30*time.Minute)) || !got[19].Minute.Equal(base.Add(29*time.Minute)) {
			t.Fatalf("kept %d rows from %s to %s, want the 20 of minutes 29 and 30", len(got), got[len(got)-1].Minute, got[0].Minute)
		}
		// Retention: minutes before Before go.
		record(base.Add(30*time.Minute), 25)
		if got, err = db.ListRejections(ctx); err != nil || len(got) != 10 {
			t.Fatalf("after retention: %d rows (%v), want 10", len(got), err)
		}
		if err := db.RecordRejections(ctx, ordersync.RecordRejectionsParams{MaxRows: 0}); err == nil {
			t.Fatal("MaxRows 0 accepted")
		}
	})
}
