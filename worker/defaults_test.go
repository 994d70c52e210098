package worker

import (
	"log/slog"
	"testing"
	"time"
)

// TestFollowerAndReplayerDefaults: what the follower's and the replayer's
// configs leave out is filled in as for every stage (a logger that
// discards, time.Now), and what they set is kept.
func TestFollowerAndReplayerDefaults(t *testing.T) {
	f := FollowerConfig{}.withDefaults()
	r := ReplayerConfig{}.withDefaults()
	if f.Logger == nil || f.Clock == nil || r.Logger == nil || r.Clock == nil {
		t.Fatalf("defaults left a field nil: follower %+v, replayer %+v", f, r)
	}
	if d := time.Since(f.Clock()); d < 0 || d > time.Minute {
		t.Errorf("the follower's default clock is %v off", d)
	}
	if d := time.Since(r.Clock()); d < 0 || d > time.Minute {
		t.Errorf("the replayer's default clock is %v off", d)
	}
	logger := slog.New(slog.DiscardHandler)
	epoch := time.Unix(0, 0)
	clock := func() time.Time { return epoch }
	f = FollowerConfig{Logger: logger, Clock: clock}.withDefaults()
	r = ReplayerConfig{Logger: logger, Clock: clock}.withDefaults()
	if f.Logger != logger || !f.Clock().Equal(epoch) || r.Logger != logger || !r.Clock().Equal(epoch) {
		t.Error("defaults replaced a logger or clock that was set")
	}
}
