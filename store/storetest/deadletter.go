package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// testDeadLetters: letters are kept whole, found, listed newest first by
// filter, updated while not replayed, and marked replayed.
func testDeadLetters(t *testing.T, s Store) {
	ctx := context.Background()
	body := []byte(`{"orderId":"41","orderType":"FASTLINK_CHARGE","type":"SuccessPayment"}`)
	first, err := s.AddDeadLetter(ctx, ordersync.DeadLetter{MsgID: "dl-1", Account: account, Reason: ordersync.ReasonUnresolved, Attempts: 1, OrderID: "41", Body: body, Headers: map[string]string{"A": "b"}})
	if err != nil {
		t.Fatalf("AddDeadLetter: %v", err)
	}
	second, err := s.AddDeadLetter(ctx, ordersync.DeadLetter{MsgID: "dl-2", Account: account, Reason: ordersync.ReasonUnknownOrder, LastError: "404"})
	if err != nil {
		t.Fatalf("AddDeadLetter: %v", err)
	}
	again, err := s.AddDeadLetter(ctx, ordersync.DeadLetter{MsgID: "dl-1", Account: account, Reason: ordersync.ReasonUnresolved, Attempts: 3, OrderID: "41", Body: body})
	if err != nil || again != first {
		t.Errorf("the same MsgID again: id %d, %v; want %d (updated)", again, err, first)
	}
	dl, err := s.FindDeadLetter(ctx, first)
	if err != nil || dl.Attempts != 3 || string(dl.Body) != string(body) || dl.OrderID != "41" {
		t.Errorf("FindDeadLetter = %+v, %v", dl, err)
	}
	if _, err := s.FindDeadLetter(ctx, second+100); !errors.Is(err, ordersync.ErrNotFound) {
		t.Errorf("FindDeadLetter of an unknown id: %v, want ErrNotFound", err)
	}
	all, err := s.ListDeadLetters(ctx, ordersync.DeadLetterFilter{})
	if err != nil || len(all) != 2 || all[0].ID != second {
		t.Errorf("ListDeadLetters = %d letters, %v; want 2, newest first", len(all), err)
	}
	byReason, _ := s.ListDeadLetters(ctx, ordersync.DeadLetterFilter{Reason: ordersync.ReasonUnresolved})
	byOrder, _ := s.ListDeadLetters(ctx, ordersync.DeadLetterFilter{OrderID: "41"})
	if len(byReason) != 1 || len(byOrder) != 1 || byReason[0].ID != first || byOrder[0].ID != first {
		t.Errorf("by reason %d letters, by order %d; want dl-1 each", len(byReason), len(byOrder))
	}
	evs, err := s.ListEvents(ctx, ordersync.EventFilter{MsgID: "dl-1"})
	if err != nil || len(evs) != 1 || evs[0].Outcome != ordersync.OutcomeDeadLettered || evs[0].Type != "SuccessPayment" {
		t.Errorf("event log of a dead letter: %+v, %v; want dead_lettered, its type", evs, err)
	}
	if err := s.MarkDeadLetterReplayed(ctx, first, time.Now()); err != nil {
		t.Fatalf("MarkDeadLetterReplayed: %v", err)
	}
	if err := s.MarkDeadLetterReplayed(ctx, second+100, time.Now()); !errors.Is(err, ordersync.ErrNotFound) {
		t.Errorf("MarkDeadLetterReplayed of an unknown id: %v, want ErrNotFound", err)
	}
	left, _ := s.ListDeadLetters(ctx, ordersync.DeadLetterFilter{})
	withReplayed, _ := s.ListDeadLetters(ctx, ordersync.DeadLetterFilter{IncludeReplayed: true})
	if len(left) != 1 || len(withReplayed) != 2 {
		t.Errorf("after a replay: %d listed, %d with replayed; want 1, 2", len(left), len(withReplayed))
	}
	if dl, _ := s.FindDeadLetter(ctx, first); dl == nil || dl.ReplayedAt == nil || dl.ReplayCount != 1 {
		t.Errorf("replayed letter %+v, want ReplayedAt set, ReplayCount 1", dl)
	}
	// Counts per reason, and pages of a listing by BeforeID.
	if n, err := s.CountDeadLetters(ctx, ordersync.DeadLetterFilter{IncludeReplayed: true, Limit: 1}); err != nil ||
		n[ordersync.ReasonUnresolved] != 1 || n[ordersync.ReasonUnknownOrder] != 1 || len(n) != 2 {
		t.Errorf("CountDeadLetters with replayed = %v, %v; want one of each reason", n, err)
	}
	if n, _ := s.CountDeadLetters(ctx, ordersync.DeadLetterFilter{}); n[ordersync.ReasonUnresolved] != 0 || n[ordersync.ReasonUnknownOrder] != 1 {
		t.Errorf("CountDeadLetters = %v; want the unreplayed unknown_order alone", n)
	}
	page, err := s.ListDeadLetters(ctx, ordersync.DeadLetterFilter{IncludeReplayed: true, BeforeID: second})
	if err != nil || len(page) != 1 || page[0].ID != first {
		t.Errorf("ListDeadLetters before %d = %d letters, %v; want dl-1 alone", second, len(page), err)
	}
	// A replayed letter failing again is a new letter.
	if id, err := s.AddDeadLetter(ctx, ordersync.DeadLetter{MsgID: "dl-1", Account: account, Reason: ordersync.ReasonUnresolved}); err != nil || id == first {
		t.Errorf("dl-1 failing after its replay: id %d, %v; want a new letter", id, err)
	}
}
