package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

func TestListOrdersAndCounts(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		created := func(day int) func(map[string]any) {
			return func(doc map[string]any) { doc["created"] = fmt.Sprintf("2026-10-%02dT12:00:00.000Z", day) }
		}
		var batch []ordersync.ApplyParams
		statuses := []ordersync.Status{"PENDING", "PAID", "PAID", "CANCELLED", "FINALIZED"}
		for i, st := range statuses {
			batch = append(batch, fetched(orderDoc(t, fmt.Sprintf("l%d", i), i+1, st, created(10+i)), int64(i+1)))
		}
		other := fetched(orderDoc(t, "l-other", 99, ordersync.StatusPaid, created(20)), 9)
		other.Account = "other"
		batch = append(batch, other)
		apply(t, db, batch...)
		if err := db.RecordOrderRef(ctx, ordersync.OrderRef{Account: "default", Code: "unfetched"}); err != nil {
			t.Fatal(err)
		}

		tests := []struct {
			name   string
			filter ordersync.OrderFilter
			want   []string
			total  int
		}{
			{"all, newest first", ordersync.OrderFilter{}, []string{"l-other", "l4", "l3", "l2", "l1", "l0"}, 6},
			{"account", ordersync.OrderFilter{Account: "default"}, []string{"l4", "l3", "l2", "l1", "l0"}, 5},
			{"status", ordersync.OrderFilter{Account: "default", Statuses: []ordersync.Status{ordersync.StatusPaid}}, []string{"l2", "l1"}, 2},
			{"statuses", ordersync.OrderFilter{Account: "default", Statuses: []ordersync.Status{ordersync.StatusPending, ordersync.StatusCancelled}}, []string{"l3", "l0"}, 2},
			{"since", ordersync.OrderFilter{Since: time.Date(2026, 10, 13, 12, 0, 0, 0, time.UTC)}, []string{"l-other", "l4", "l3"}, 3},
			{"page", ordersync.OrderFilter{Account: "default", Limit: 2, Offset: 1}, []string{"l3", "l2"}, 5},
			{"page past the end", ordersync.OrderFilter{Account: "default", Limit: 2, Offset: 9}, nil, 5},
			// A bounded count stops one past its bound, exact within it.
			{"count past its bound", ordersync.OrderFilter{Account: "default", Limit: 1, CountUpTo: 3}, []string{"l4"}, 4},
			{"count at its bound", ordersync.OrderFilter{Account: "default", Limit: 1, CountUpTo: 5}, []string{"l4"}, 5},
			{"searched count past its bound", ordersync.OrderFilter{Q: "15.89", Limit: 1, CountUpTo: 1}, []string{"l-other"}, 2},
		}
		for _, tt := range tests {
			tt.filter.Count = true
			page, err := db.ListOrders(ctx, tt.filter)
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if page.Total == nil || *page.Total != tt.total {
				t.Errorf("%s: total %v, want %d", tt.name, page.Total, tt.total)
			}
			var codes []string
			for _, m := range page.Orders {
				codes = append(codes, m.Order.OrderCode)
				if len(m.Order.LineItems) != 2 || len(m.Order.Metadata) != 2 || m.Order.Total.String() != "15.89" {
					t.Errorf("%s: %s lacks its details: %+v", tt.name, m.Order.OrderCode, m.Order)
				}
			}
			if !slices.Equal(codes, tt.want) {
				t.Errorf("%s: orders %q, want %q", tt.name, codes, tt.want)
			}
		}

		counts, err := db.CountOrdersByStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[ordersync.Status]int{"": 1, "PENDING": 1, "PAID": 3, "CANCELLED": 1, "FINALIZED": 1}
		if fmt.Sprint(counts) != fmt.Sprint(want) {
			t.Errorf("CountOrdersByStatus = %v, want %v (the placeholder under \"\")", counts, want)
		}
	})
}

func TestDeadLetterLifecycle(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "webhook-successpayment-rich-metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		letter := ordersync.DeadLetter{
			MsgID: "dl-1", Account: "default", Reason: ordersync.ReasonUnresolved, Attempts: 1,
			LastError: "no order code for id 31548", OrderID: "31548", OrderReference: "ped_91b0e4d2",
			Body: body, Headers: map[string]string{"Nats-Msg-Id": "dl-1", "X-H4B-Hmac-Sha256": "redacted"}, CreatedAt: testNow,
		}
		id, err := db.AddDeadLetter(ctx, letter)
		if err != nil {
			t.Fatal(err)
		}
		// The same event failing again updates its letter.
		again := letter
		again.Attempts, again.LastError = 2, "still unresolved"
		if id2, err := db.AddDeadLetter(ctx, again); err != nil || id2 != id {
			t.Fatalf("AddDeadLetter again = %d, %v; want the same letter %d", id2, err, id)
		}
		malformed := ordersync.DeadLetter{MsgID: "dl-2", Account: "default", Reason: ordersync.ReasonMalformed, Body: []byte("\x00not json"), CreatedAt: testNow.Add(time.Second)}
		id3, err := db.AddDeadLetter(ctx, malformed)
		if err != nil {
			t.Fatal(err)
		}

		got, err := db.FindDeadLetter(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want := again
		want.ID = id
		if fmt.Sprint(*got) != fmt.Sprint(want) || string(got.Body) != string(body) {
			t.Errorf("FindDeadLetter = %+v\nwant %+v", *got, want)
		}
		events, err := db.ListEvents(ctx, ordersync.EventFilter{OrderID: "31548"})
		if err != nil || len(events) != 1 || events[0].Outcome != ordersync.OutcomeDeadLettered || events[0].Type != ordersync.EventSuccessPayment {
			t.Errorf("event log of the letter = %+v, %v; want one dead_lettered SuccessPayment", events, err)
		}

		list := func(f ordersync.DeadLetterFilter) []int64 {
			t.Helper()
			dls, err := db.ListDeadLetters(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, dl := range dls {
				ids = append(ids, dl.ID)
			}
			return ids
		}
		if got := list(ordersync.DeadLetterFilter{}); !slices.Equal(got, []int64{id3, id}) {
			t.Errorf("ListDeadLetters = %v, want newest first %v", got, []int64{id3, id})
		}
		if got := list(ordersync.DeadLetterFilter{Reason: ordersync.ReasonMalformed}); !slices.Equal(got, []int64{id3}) {
			t.Errorf("by reason = %v, want [%d]", got, id3)
		}
		if got := list(ordersync.DeadLetterFilter{OrderReference: "ped_91b0e4d2"}); !slices.Equal(got, []int64{id}) {
			t.Errorf("by reference = %v, want [%d]", got, id)
		}

		if err := db.MarkDeadLetterReplayed(ctx, id, testNow.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if got := list(ordersync.DeadLetterFilter{OrderID: "31548"}); len(got) != 0 {
			t.Errorf("replayed letter still listed: %v", got)
		}
		if got := list(ordersync.DeadLetterFilter{OrderID: "31548", IncludeReplayed: true}); !slices.Equal(got, []int64{id}) {
			t.Errorf("with IncludeReplayed = %v, want [%d]", got, id)
		}
		if err := db.MarkDeadLetterReplayed(ctx, id, testNow.Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		got, err = db.FindDeadLetter(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.ReplayCount != 2 || got.ReplayedAt == nil || !got.ReplayedAt.Equal(testNow.Add(2*time.Hour)) {
			t.Errorf("after two replays: count %d at %v", got.ReplayCount, got.ReplayedAt)
		}
		// Failing again after a replay is a new letter.
		id4, err := db.AddDeadLetter(ctx, letter)
		if err != nil || id4 == id {
			t.Errorf("AddDeadLetter after replay = %d, %v; want a new letter", id4, err)
		}
		if _, err := db.AddDeadLetter(ctx, ordersync.DeadLetter{Account: "default", Reason: ordersync.ReasonMalformed}); err == nil {
			t.Error("AddDeadLetter without MsgID succeeded")
		}
	})
}

func TestOutboxPendingAndSent(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		apply(t, db,
			fetched(orderDoc(t, "ob1", 1, ordersync.StatusPending), 1),
			fetched(orderDoc(t, "ob2", 2, ordersync.StatusPaid), 2),
		)
		pending, err := db.PendingOutbox(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range pending {
			ids = append(ids, m.MsgID)
			if m.Account != "default" || m.CreatedAt.IsZero() || len(m.Payload) == 0 {
				t.Errorf("message %+v incomplete", m)
			}
		}
		want := []string{"default:ob1:status:PENDING:1", "default:ob2:status:PAID:1", "default:ob2:paid"}
		if !slices.Equal(ids, want) {
			t.Fatalf("PendingOutbox = %q, want oldest first %q", ids, want)
		}
		first, err := db.PendingOutbox(ctx, 2)
		if err != nil || len(first) != 2 || first[0].ID != pending[0].ID {
			t.Fatalf("PendingOutbox(2) = %+v, %v", first, err)
		}
		if err := db.MarkOutboxSent(ctx, []int64{first[0].ID, first[1].ID, 987654}, testNow); err != nil {
			t.Fatal(err)
		}
		rest, err := db.PendingOutbox(ctx, 10)
		if err != nil || len(rest) != 1 || rest[0].MsgID != "default:ob2:paid" {
			t.Fatalf("after MarkOutboxSent: %+v, %v", rest, err)
		}
		if err := db.MarkOutboxSent(ctx, []int64{rest[0].ID}, testNow); err != nil {
			t.Fatal(err)
		}
		if none, err := db.PendingOutbox(ctx, 10); err != nil || len(none) != 0 {
			t.Errorf("all sent, still pending: %+v, %v", none, err)
		}
	})
}

func TestReadersRespectContext(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := db.ListOrders(ctx, ordersync.OrderFilter{}); !errors.Is(err, context.Canceled) {
			t.Errorf("ListOrders with a cancelled context: %v, want context.Canceled", err)
		}
		if _, err := db.ApplyOrders(ctx, []ordersync.ApplyParams{fetched(orderDoc(t, "x", 1, ordersync.StatusPending), 1)}); !errors.Is(err, context.Canceled) {
			t.Errorf("ApplyOrders with a cancelled context: %v, want context.Canceled", err)
		}
	})
}

// TestStoreCurrency: the currency of an account's latest fetched order;
// nothing before one is fetched (a recorded link has no store yet).
func TestStoreCurrency(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		currency := func(account string) string {
			t.Helper()
			c, err := db.StoreCurrency(ctx, account)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		if c := currency("default"); c != "" {
			t.Errorf("empty mirror: %q, want none", c)
		}
		if err := db.RecordOrderRef(ctx, ordersync.OrderRef{Account: "default", Code: "recorded"}); err != nil {
			t.Fatal(err)
		}
		if c := currency("default"); c != "" {
			t.Errorf("only a recorded link: %q, want none", c)
		}
		apply(t, db, fetched(orderDoc(t, "c1", 1, ordersync.StatusPending), 1))
		apply(t, db, fetched(orderDoc(t, "c2", 2, ordersync.StatusPending, func(doc map[string]any) {
			doc["store"].(map[string]any)["currencyCode"] = "JPY"
		}), 2))
		if c := currency("default"); c != "JPY" {
			t.Errorf("after a JPY order: %q, want JPY (the latest)", c)
		}
		if c := currency("other"); c != "" {
			t.Errorf("another account: %q, want none", c)
		}
	})
}
