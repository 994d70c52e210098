package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestDeadLettersRequeued: RequeuedFrom/To select the letters of events a
// replay re-queued in that period that failed again (message id
// replay:<letter>:<count>), and neither the letters replayed nor others.
func TestDeadLettersRequeued(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		add := func(msg string) int64 {
			id, err := db.AddDeadLetter(ctx, ordersync.DeadLetter{MsgID: msg, Account: ordersync.DefaultAccount,
				Reason: ordersync.ReasonUnresolved, Attempts: 1, OrderID: "77", Body: []byte(`{}`), CreatedAt: testNow})
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		a, b := add("m-a"), add("m-b")
		add("m-c") // never replayed
		if err := db.MarkDeadLetterReplayed(ctx, a, testNow.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := db.MarkDeadLetterReplayed(ctx, b, testNow.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		again := add(fmt.Sprintf("replay:%d:1", a))
		add(fmt.Sprintf("replay:%d:1", b))
		list := func(from, to time.Time) []int64 {
			dls, err := db.ListDeadLetters(ctx, ordersync.DeadLetterFilter{RequeuedFrom: from, RequeuedTo: to})
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, dl := range dls {
				ids = append(ids, dl.ID)
			}
			counts, err := db.CountDeadLetters(ctx, ordersync.DeadLetterFilter{RequeuedFrom: from, RequeuedTo: to})
			if err != nil || counts[ordersync.ReasonUnresolved] != len(ids) {
				t.Errorf("count %v (%v), list %v", counts, err, ids)
			}
			return ids
		}
		if got := list(testNow, testNow.Add(10*time.Minute)); fmt.Sprint(got) != fmt.Sprint([]int64{again}) {
			t.Errorf("failed again after the first minute's replay: %v, want [%d]", got, again)
		}
		if got := list(testNow, time.Time{}); len(got) != 2 {
			t.Errorf("failed again since the start: %v, want both replays' letters", got)
		}
		if got := list(testNow.Add(2*time.Hour), time.Time{}); len(got) != 0 {
			t.Errorf("failed again after every replay: %v, want none", got)
		}
	})
}
