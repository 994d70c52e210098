package webhook

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
)

// beatLog keeps the beats a receiver records and signals each write.
type beatLog struct {
	mu    sync.Mutex
	beats []ordersync.ReceiverBeat
	wrote chan struct{}
}

func (b *beatLog) RecordReceiverBeats(_ context.Context, beats []ordersync.ReceiverBeat) error {
	b.mu.Lock()
	b.beats = append(b.beats, beats...)
	b.mu.Unlock()
	b.wrote <- struct{}{}
	return nil
}

func (b *beatLog) ListReceiverBeats(context.Context, string, time.Time) ([]ordersync.ReceiverBeat, error) {
	return nil, nil
}

func (b *beatLog) PruneReceiverBeats(context.Context, time.Time) (int, error) { return 0, nil }

// TestHeartbeatCountsAnswers: the receiver's heartbeat carries, per
// account, the webhooks it accepted and those it refused, and keeps one
// receiver id and start time across beats.
func TestHeartbeatCountsAnswers(t *testing.T) {
	tq := startQueue(t, t.TempDir(), queueConfig())
	rc, url := startReceiver(t, Config{Secrets: []string{newSecret}, Publisher: tq.q, Recorder: &memRecorder{}, Registerer: prometheus.NewRegistry()})
	created := fixture(t, "webhook-created-captured-shape.json")
	if r := post(t, "POST", url+Path, created, Sign(newSecret, created)); r.status != 200 {
		t.Fatalf("signed webhook: %d %s", r.status, r.body)
	}
	for range 3 {
		if r := post(t, "POST", url+Path, created, Sign(oldSecret, created)); r.status != 401 {
			t.Fatalf("webhook signed with another secret: %d %s", r.status, r.body)
		}
	}
	log := &beatLog{wrote: make(chan struct{})}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		rc.Heartbeat(ctx, log, time.Millisecond)
	}()
	<-log.wrote
	<-log.wrote
	stop()
	go func() {
		for range log.wrote { // a write racing the stop
		}
	}()
	<-done
	close(log.wrote)
	log.mu.Lock()
	defer log.mu.Unlock()
	first, last := log.beats[0], log.beats[len(log.beats)-1]
	if first.ReceiverID == "" || first.ReceiverID != last.ReceiverID || !first.StartedAt.Equal(last.StartedAt) || last.BeatAt.Before(first.BeatAt) {
		t.Errorf("beats %+v then %+v: want one receiver id and start, beats moving on", first, last)
	}
	if want := (ordersync.WebhookCounts{Accepted: 1, Refused: 3}); last.Account != ordersync.DefaultAccount || last.WebhookCounts != want {
		t.Errorf("beat %+v, want account %s with %+v", last, ordersync.DefaultAccount, want)
	}
}
