package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// testReceiverHeartbeats: a receiver's beat per account replaces its last
// one and keeps its first start; a listing holds the account's beats at or
// after since, oldest start first; pruning deletes the beats older than
// its bound.
func testReceiverHeartbeats(t *testing.T, s Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 4, 7, 0, 0, 0, time.UTC)
	beat := func(id, acct string, started, at time.Time, accepted int64) ordersync.ReceiverBeat {
		return ordersync.ReceiverBeat{ReceiverID: id, Account: acct, StartedAt: started, BeatAt: at,
			WebhookCounts: ordersync.WebhookCounts{Accepted: accepted, Unavailable: 1, Refused: 2}}
	}
	if err := s.RecordReceiverBeats(ctx, []ordersync.ReceiverBeat{
		beat("r2", account, t0.Add(time.Minute), t0.Add(time.Minute), 1),
		beat("r2", "other", t0.Add(time.Minute), t0.Add(time.Minute), 9),
		beat("r1", account, t0, t0, 0),
	}); err != nil {
		t.Fatalf("RecordReceiverBeats: %v", err)
	}
	// r1 beats again; the start it sends is not its first.
	if err := s.RecordReceiverBeats(ctx, []ordersync.ReceiverBeat{beat("r1", account, t0.Add(time.Hour), t0.Add(2*time.Minute), 7)}); err != nil {
		t.Fatalf("RecordReceiverBeats again: %v", err)
	}
	beats, err := s.ListReceiverBeats(ctx, account, t0)
	if err != nil || len(beats) != 2 {
		t.Fatalf("ListReceiverBeats = %+v, %v; want r1 and r2", beats, err)
	}
	if b := beats[0]; b.ReceiverID != "r1" || !b.StartedAt.Equal(t0) || !b.BeatAt.Equal(t0.Add(2*time.Minute)) ||
		b.Accepted != 7 || b.Unavailable != 1 || b.Refused != 2 {
		t.Errorf("r1's beat: %+v; want its first start, its last beat and counts", b)
	}
	if beats[1].ReceiverID != "r2" || beats[1].Account != account || beats[1].Accepted != 1 {
		t.Errorf("r2's beat: %+v", beats[1])
	}
	if beats, err := s.ListReceiverBeats(ctx, account, t0.Add(90*time.Second)); err != nil || len(beats) != 1 || beats[0].ReceiverID != "r1" {
		t.Errorf("beats since r2's: %+v, %v; want r1's only", beats, err)
	}
	if n, err := s.PruneReceiverBeats(ctx, t0.Add(90*time.Second)); err != nil || n != 2 {
		t.Errorf("PruneReceiverBeats = %d, %v; want r2's two", n, err)
	}
	if beats, err := s.ListReceiverBeats(ctx, "other", t0); err != nil || len(beats) != 0 {
		t.Errorf("other's beats after pruning: %+v, %v; want none", beats, err)
	}
}
