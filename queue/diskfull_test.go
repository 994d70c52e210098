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
