package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// postgresEnv names the PostgreSQL server the conformance suite also runs
// against, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
const postgresEnv = "ORDERSYNC_TEST_POSTGRES_URL"

// eachDialect runs test once per dialect, each time against a fresh,
// empty database: a new SQLite file, or a new PostgreSQL schema dropped at
// cleanup. The URL lets a test open the same database again.
func eachDialect(t *testing.T, test func(t *testing.T, url string)) {
	t.Helper()
	t.Run(DialectSQLite, func(t *testing.T) { test(t, sqliteURL(t)) })
	t.Run(DialectPostgres, func(t *testing.T) { test(t, postgresURL(t)) })
}

func sqliteURL(t *testing.T) string {
	t.Helper()
	return "sqlite:" + filepath.Join(t.TempDir(), "mirror.db")
}

// postgresURL creates a schema with a unique name and returns a URL whose
// connections use it as their search_path.
func postgresURL(t *testing.T) string {
	t.Helper()
	base := os.Getenv(postgresEnv)
	if base == "" {
		t.Skipf("PostgreSQL conformance skipped: set %s (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)", postgresEnv)
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("open %s: %v", postgresEnv, err)
	}
	t.Cleanup(func() { admin.Close() })
	suffix := make([]byte, 6)
	rand.Read(suffix)
	schema := "ordersync_test_" + hex.EncodeToString(suffix)
	ctx := context.Background()
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", postgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// openDB opens the database at url and closes it at cleanup (registered
// after the schema's, so it runs before the schema is dropped).
func openDB(t *testing.T, url string) *DB {
	t.Helper()
	db, err := Open(context.Background(), Config{URL: url, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

var fixtureOrder = func() []byte {
	b, err := os.ReadFile(filepath.Join("testdata", "order-detail.json"))
	if err != nil {
		panic(err)
	}
	return b
}()

// orderDoc builds a fetched order detail from testdata/order-detail.json
// with the given keys and status. A paid status gets a payment; edit may
// change anything else in the document. Numbers keep their digits.
func orderDoc(t testing.TB, code string, id int, status ordersync.Status, edit ...func(doc map[string]any)) *ordersync.Order {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(fixtureOrder))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("decode fixture: %v", err)
	}
	doc["orderCode"] = code
	doc["orderId"] = json.Number(strconv.Itoa(id))
	doc["orderReference"] = "ref-" + code
	doc["orderStatus"] = string(status)
	doc["paymentLinkUrl"] = "https://pay.example.com/" + code
	if status.IsPaidState() {
		doc["payment"] = map[string]any{
			"authorizationCode": "204981",
			"voucherUrl":        "https://pay.example.com/voucher/" + code,
			"buyer":             map[string]any{"name": "José Peña", "phone": "+50370001234", "email": "jose@example.com"},
		}
	}
	for _, e := range edit {
		e(doc)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatalf("encode order detail: %v", err)
	}
	o, err := ordersync.DecodeOrder(b)
	if err != nil {
		t.Fatalf("DecodeOrder: %v", err)
	}
	return o
}

// apply applies params and fails the test on error.
func apply(t *testing.T, db *DB, params ...ordersync.ApplyParams) []ordersync.ApplyResult {
	t.Helper()
	res, err := db.ApplyOrders(context.Background(), params)
	if err != nil {
		t.Fatalf("ApplyOrders: %v", err)
	}
	if len(res) != len(params) {
		t.Fatalf("ApplyOrders returned %d results for %d params", len(res), len(params))
	}
	return res
}

// fetched is an ApplyParams for the default account.
func fetched(o *ordersync.Order, seq int64, events ...ordersync.EventRecord) ordersync.ApplyParams {
	return ordersync.ApplyParams{
		Account: ordersync.DefaultAccount, Order: o, Seq: seq,
		FetchedAt: time.Date(2026, 10, 10, 18, 5, 0, 0, time.UTC).Add(time.Duration(seq) * time.Second),
		Cause:     ordersync.CauseWebhook, Events: events,
	}
}

// historyRow is one status_history row as the tests read it.
type historyRow struct {
	From     string `db:"from_status"`
	To       string `db:"to_status"`
	FetchSeq int64  `db:"fetch_seq"`
	Cause    string `db:"cause"`
}

func statusHistory(t *testing.T, db *DB, code string) []historyRow {
	t.Helper()
	var rows []historyRow
	if err := db.read.Select(&rows, db.rebind(`SELECT h.from_status, h.to_status, h.fetch_seq, h.cause FROM status_history h JOIN orders o ON o.id = h.order_row
WHERE o.account = ? AND o.order_code = ? ORDER BY h.id`), ordersync.DefaultAccount, code); err != nil {
		t.Fatalf("read status history: %v", err)
	}
	return rows
}

// outboxFor returns every outbox message of an order, sent or not.
func outboxFor(t *testing.T, db *DB, code string) []ordersync.OutboxMessage {
	t.Helper()
	var rows []struct {
		ID      int64  `db:"id"`
		Subject string `db:"subject"`
		MsgID   string `db:"msg_id"`
		Payload []byte `db:"payload"`
	}
	if err := db.read.Select(&rows, db.rebind(`SELECT id, subject, msg_id, payload FROM outbox WHERE account = ? AND order_code = ? ORDER BY id`), ordersync.DefaultAccount, code); err != nil {
		t.Fatalf("read outbox: %v", err)
	}
	msgs := make([]ordersync.OutboxMessage, len(rows))
	for i, r := range rows {
		msgs[i] = ordersync.OutboxMessage{ID: r.ID, Subject: r.Subject, MsgID: r.MsgID, Payload: r.Payload}
	}
	return msgs
}
