package queue

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/testenv"
)

// TestEmbeddedRecoversFromFullDisk: a full disk makes the file store
// refuse the write and every later one, even after space returns; the
// embedded server notices, reloads JetStream once the disk has room, and
// every acknowledged event is still there, once.
func TestEmbeddedRecoversFromFullDisk(t *testing.T) {
	t.Parallel()
	mnt := testenv.MountTmpfs(t, 32<<20)
	e, err := StartEmbedded(EmbeddedConfig{StoreDir: filepath.Join(mnt, "js"), RecoverInterval: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	cfg := uniqueConfig()
	cfg.ProbeEvery = -1 // each call writes: the test follows the disk from one call to the next
	q := newQueue(t, connect(t, e), cfg)
	acked := map[string]bool{}
	pub := func(i int) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		id := fmt.Sprintf("m%d", i)
		_, err := q.PublishEvent(ctx, &ordersync.InboundEvent{MsgID: id, Account: "default", Body: make([]byte, 1000)})
		if err == nil {
			acked[id] = true
		}
		return err
	}
	for i := range 10 {
		if err := pub(i); err != nil {
			t.Fatal(err)
		}
	}
	ready := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		return q.Ready(ctx)
	}
	if err := ready(); err != nil {
		t.Fatalf("Ready before the disk filled: %v", err)
	}
	filler := testenv.FillLeaving(t, mnt, 0)
	if err := ready(); err == nil || !strings.Contains(err.Error(), "probe write") {
		t.Fatalf("Ready on a full disk = %v, want the probe write's failure", err)
	}
	i := 10
	for ; pub(i) == nil; i++ {
		if i > 100_000 {
			t.Fatal("100,000 publishes on a full disk acknowledged")
		}
	}
	if e.WriteErr() == nil {
		t.Fatal("a publish failed on a full disk, and WriteErr is nil")
	}
	t.Logf("full after %d events: %v", len(acked), e.WriteErr())
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "JetStream reloaded after space returned", func() bool { return e.WriteErr() == nil })
	if err := ready(); err != nil {
		t.Fatalf("Ready after the reload: %v", err)
	}
	for j := range 10 {
		if err := pub(i + 1 + j); err != nil {
			t.Fatalf("publish after the reload: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seen := drain(t, ctx, q.Events(), len(acked))
	for id := range acked {
		if seen[id] != 1 {
			t.Errorf("acknowledged event %s delivered %d times, want once", id, seen[id])
		}
	}
}

// TestLostPullEndsWithinTwoBeats: JetStream reloaded under a waiting pull
// (as after a full disk) drops the pull without a word. Two missed
// heartbeats end it and the next pull takes the event published after the
// reload, where the pull's own 30 s, or two of the library's default 5 s
// beats, would have kept the pool, or an endpoint's dispatcher, waiting.
func TestLostPullEndsWithinTwoBeats(t *testing.T) {
	t.Parallel()
	t.Run("pool", func(t *testing.T) {
		t.Parallel()
		e, q := embeddedQueue(t, uniqueConfig())
		pull := func(ctx context.Context) string {
			if ds, _ := q.Events().Next(ctx, 10, 30*time.Second); len(ds) > 0 {
				return ds[0].Event().MsgID
			}
			return ""
		}
		publish := func(ctx context.Context) error {
			_, err := q.PublishEvent(ctx, testEvent(1))
			return err
		}
		reloadUnderPull(t, e, q.consumer, pull, publish, testEvent(1).MsgID)
	})
	t.Run("endpoint", func(t *testing.T) {
		t.Parallel()
		e, q := embeddedQueue(t, uniqueConfig())
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		src, consumer := resumedReader(ctx, t, q, q)
		pull := func(ctx context.Context) string {
			if ds, _ := src.Next(ctx, 10, 30*time.Second); len(ds) > 0 {
				return ds[0].Event().MsgID
			}
			return ""
		}
		m := ordersync.OutboxMessage{Subject: ordersync.SubjectStatusPrefix + string(ordersync.StatusPending), MsgID: "A:1",
			Payload: []byte(`{"orderCode":"A","orderStatus":"PENDING"}`)}
		publish := func(ctx context.Context) error {
			_, err := q.PublishMessages(ctx, []ordersync.OutboxMessage{m})
			return err
		}
		reloadUnderPull(t, e, consumer, pull, publish, m.MsgID)
	})
}

// reloadUnderPull reloads e's JetStream while pull waits at consumer,
// publishes once the streams take messages again, and fails unless pull,
// called again as each pull ends, returns want within 8 s.
func reloadUnderPull(t *testing.T, e *Embedded, consumer jetstream.Consumer, pull func(context.Context) string, publish func(context.Context) error, want string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 1)
	go func() {
		for ctx.Err() == nil {
			if id := pull(ctx); id != "" {
				got <- id
				return
			}
		}
	}()
	waitPulling(t, consumer)
	if err := e.resetJetStream(); err != nil {
		t.Fatal(err)
	}
	reloaded := time.Now()
	testenv.WaitFor(t, 5*time.Second, "a publish taken after the reload", func() bool {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return publish(pctx) == nil
	})
	select {
	case id := <-got:
		t.Logf("pulled %v after the reload", time.Since(reloaded).Round(time.Millisecond))
		if id != want {
			t.Errorf("pulled %s, want %s", id, want)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the event published after JetStream reloaded not pulled within 8 s: the dropped pull was waited out")
	}
}
