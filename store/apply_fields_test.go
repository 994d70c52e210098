package store

import (
	"testing"
	"time"
)

// TestOrderFieldsNameEachColumnOnce: a column named twice would make the
// upsert fail at run time on both dialects; catch it without a database.
func TestOrderFieldsNameEachColumnOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range orderFields {
		if seen[f.column] {
			t.Errorf("column %s declared twice", f.column)
		}
		seen[f.column] = true
	}
	if upsertOrders.cols != len(orderFields) || touchOrders.cols != len(touchFields) {
		t.Fatalf("statements take %d and %d columns, fields are %d and %d", upsertOrders.cols, touchOrders.cols, len(orderFields), len(touchFields))
	}
}

// TestTouchFieldsReadOnlyTheState: the bookkeeping of an unchanged order is
// written without its document, so none of its fields may read one.
func TestTouchFieldsReadOnlyTheState(t *testing.T) {
	synced := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	st := &orderState{FirstSeenAt: synced.Add(-time.Hour), FetchSeq: 7, FetchCount: 3, LastSyncedAt: &synced, LastEventType: "Updated"}
	got := (&orderWrite{key: orderKey{"acme", "yY7Mcnd"}, st: st}).values(touchFields)
	want := []any{"acme", "yY7Mcnd", synced.Add(-time.Hour), int64(7), int64(3), synced, nil, "Updated", nil}
	if len(got) != len(want) {
		t.Fatalf("got %d values, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s = %v, want %v", touchFields[i].column, got[i], want[i])
		}
	}
}
