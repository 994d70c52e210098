// Package testenv gives a test or a lab run its own share of the external
// servers a scale-out deployment uses: a fresh PostgreSQL database
// (Databases, copied from a migrated template) or schema (New) and a NATS
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
// schema (New) or database (Services) and a NATS namespace, named after
// a random run id.
type Run struct {
	NATSURL     string
	DatabaseURL string // New's: with search_path set to the run's schema
	Namespace   string
	baseURL     string // New's: where to drop the schema from
}

// runName is a run id that is also a valid schema and stream name.
func runName() string {
	b := make([]byte, 5)
	_, _ = crand.Read(b)
	return "mp" + hex.EncodeToString(b)
}

// New creates the run's schema, for a lab run. natsURL may be empty for
// a run that uses only the schema.
func New(ctx context.Context, natsURL, databaseURL string) (*Run, error) {
	admin, err := ScratchURL(databaseURL)
	if err != nil {
		return nil, err
	}
	run := &Run{NATSURL: natsURL, Namespace: runName(), baseURL: admin}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+run.Namespace); err != nil {
		return nil, fmt.Errorf("create schema %s: %w", run.Namespace, err)
	}
	// The pipeline under a lab run writes at the server's own settings, as
	// a deployment's would: its promises are measured at the defaults.
	if run.DatabaseURL, err = SchemaURL(databaseURL, run.Namespace); err != nil {
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

// Close drops New's schema and deletes the run's streams and leader
// bucket.
func (e *Run) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var errs []error
	if e.baseURL != "" { // Services' database is dropped by its own cleanup
		if err := dropSchema(ctx, e.baseURL, e.Namespace); err != nil {
			errs = append(errs, err)
		}
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

func dropSchema(ctx context.Context, url, schema string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
		return fmt.Errorf("drop schema %s: %w", schema, err)
	}
	return nil
}

// Services returns a Run on the servers named by ORDERSYNC_TEST_POSTGRES_URL
// and ORDERSYNC_TEST_NATS_URL, its streams removed when the test ends, or
// skips the test when they are unset. Its database is the one database
// gives the test (a Databases' New, dropped by its own cleanup).
func Services(t testing.TB, database func(testing.TB) string) *Run {
	t.Helper()
	pg, natsURL := os.Getenv("ORDERSYNC_TEST_POSTGRES_URL"), os.Getenv("ORDERSYNC_TEST_NATS_URL")
	if pg == "" || natsURL == "" {
		t.Skip("set ORDERSYNC_TEST_POSTGRES_URL and ORDERSYNC_TEST_NATS_URL to run the scale-out tests against PostgreSQL and an external NATS")
	}
	run := &Run{NATSURL: natsURL, DatabaseURL: database(t), Namespace: runName()}
	t.Cleanup(func() {
		if err := run.Close(); err != nil {
			t.Errorf("clean up the external servers: %v", err)
		}
	})
	return run
}
