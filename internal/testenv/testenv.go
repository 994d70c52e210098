// Package testenv gives a test or a lab run its own share of the external
// servers a scale-out deployment uses: a fresh PostgreSQL schema and a NATS
// namespace, removed when it ends; a log destination its goroutines may
// share (Buffer); golden files (Golden); a small disk to fill
// (MountTmpfs, FillLeaving); and the waits and reads tests of several
// packages share (WaitFor, MetricSum).
package testenv

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/ordersync/ordersync"
)

// Run is one run's share of the external servers: a PostgreSQL
// schema and a NATS namespace, both named after a random run id.
type Run struct {
	NATSURL     string
	DatabaseURL string // with search_path set to the run's schema
	Namespace   string
	baseURL     string
}

// New creates the run's schema. natsURL may be empty for a run that
// uses only the schema.
func New(ctx context.Context, natsURL, databaseURL string) (*Run, error) {
	b := make([]byte, 5)
	_, _ = crand.Read(b)
	admin, err := ScratchURL(databaseURL, "")
	if err != nil {
		return nil, err
	}
	run := &Run{NATSURL: natsURL, Namespace: "mp" + hex.EncodeToString(b), baseURL: admin}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+run.Namespace); err != nil {
		return nil, fmt.Errorf("create schema %s: %w", run.Namespace, err)
	}
	if run.DatabaseURL, err = ScratchURL(databaseURL, run.Namespace); err != nil {
		return nil, err
	}
	return run, nil
}

// OrdersStream and EventsStream are the run's stream names (see
// app.Config.QueueConfig); PaidSubject is where PAID triggers go.
func (e *Run) OrdersStream() string { return strings.ToUpper(e.Namespace) + "_ORDERS" }
func (e *Run) EventsStream() string { return strings.ToUpper(e.Namespace) + "_EVENTS" }
func (e *Run) PaidSubject() string {
	return ordersync.Namespace(e.Namespace).Subject(ordersync.SubjectPaid)
}

// Close drops the schema and deletes the run's streams and leader bucket.
func (e *Run) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var errs []error
	if conn, err := pgx.Connect(ctx, e.baseURL); err != nil {
		errs = append(errs, fmt.Errorf("connect to PostgreSQL: %w", err))
	} else {
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+e.Namespace+" CASCADE"); err != nil {
			errs = append(errs, fmt.Errorf("drop schema %s: %w", e.Namespace, err))
		}
		conn.Close(ctx)
	}
	if e.NATSURL == "" { // a run with only a schema (the chaos run's mirror)
		return errors.Join(errs...)
	}
	// A handshake a loaded machine can answer, not nats.go's default 2 s.
	nc, err := nats.Connect(e.NATSURL, nats.Name("ordersync-multiproc cleanup"), nats.Timeout(15*time.Second))
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("connect to NATS: %w", err))...)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, s := range []string{e.EventsStream(), e.OrdersStream()} {
		if err := js.DeleteStream(ctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			errs = append(errs, fmt.Errorf("delete stream %s: %w", s, err))
		}
	}
	if err := js.DeleteKeyValue(ctx, e.Namespace+"_leaders"); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
		errs = append(errs, fmt.Errorf("delete leader bucket: %w", err))
	}
	return errors.Join(errs...)
}

// Services returns a Run on the servers named by ORDERSYNC_TEST_POSTGRES_URL
// and ORDERSYNC_TEST_NATS_URL, removed when the test ends, or skips the test
// when they are unset.
func Services(t testing.TB) *Run {
	t.Helper()
	pg, natsURL := os.Getenv("ORDERSYNC_TEST_POSTGRES_URL"), os.Getenv("ORDERSYNC_TEST_NATS_URL")
	if pg == "" || natsURL == "" {
		t.Skip("set ORDERSYNC_TEST_POSTGRES_URL and ORDERSYNC_TEST_NATS_URL to run the scale-out tests against PostgreSQL and an external NATS")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	run, err := New(ctx, natsURL, pg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := run.Close(); err != nil {
			t.Errorf("clean up the external servers: %v", err)
		}
	})
	return run
}
