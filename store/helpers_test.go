package store

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/leak"
	"github.com/ordersync/ordersync/internal/testenv"
)

// postgresEnv names the PostgreSQL server the conformance suite also runs
// against, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
const postgresEnv = "ORDERSYNC_TEST_POSTGRES_URL"

// eachDialect runs test once per dialect, each time against a fresh
// database at the current schema version: a new SQLite file, or a new
// PostgreSQL database dropped at cleanup. The URL lets a test open the same
// database again. Sharing nothing, such tests run in parallel with each
// other (t.Parallel): most of their time is the database's, waiting on
// its disk. The two dialects run side by side too, so a test takes the
// time of its slower dialect (PostgreSQL's round trips), not the sum.
func eachDialect(t *testing.T, test func(t *testing.T, url string)) {
	t.Helper()
	t.Parallel()
	t.Run(DialectSQLite, func(t *testing.T) { t.Parallel(); test(t, sqliteURL(t)) })
	t.Run(DialectPostgres, func(t *testing.T) { t.Parallel(); test(t, postgresURL(t)) })
}

// sqliteURL is a new SQLite file at the current schema version: a copy
// of a file goose migrated from empty once per test binary, since
// migrating a file is a transaction per migration, each synced to disk.
// A test that migrates from empty makes its own file.
func sqliteURL(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mirror.db")
	if err := os.WriteFile(path, sqliteTemplate(t), 0o600); err != nil {
		t.Fatal(err)
	}
	return "sqlite:" + path
}

var sqliteTmpl struct {
	once sync.Once
	file []byte
	err  error
}

// sqliteTemplate is the content of a SQLite file goose migrated from
// empty, closed so that its write-ahead log is checkpointed into it.
func sqliteTemplate(t *testing.T) []byte {
	t.Helper()
	sqliteTmpl.once.Do(func() {
		sqliteTmpl.file, sqliteTmpl.err = MigratedSQLiteFile()
	})
	if sqliteTmpl.err != nil {
		t.Fatalf("migrate the template SQLite file: %v", sqliteTmpl.err)
	}
	return sqliteTmpl.file
}

// postgresURL is a new PostgreSQL database at the current schema
// version, dropped at cleanup: the server's copy of a template database
// goose migrated from empty once per test binary (testenv.Databases), as
// nearly every test here wants a database of its own and goose migrates
// one migration, one transaction and round trip, at a time.
func postgresURL(t *testing.T) string {
	t.Helper()
	skipWithoutPostgres(t)
	return pgDatabases.New(t)
}

// emptyPostgresURL is a new PostgreSQL database with no schema of
// ordersync's, dropped at cleanup, for a test that migrates it itself.
func emptyPostgresURL(t *testing.T) string {
	t.Helper()
	skipWithoutPostgres(t)
	return pgDatabases.Empty(t)
}

var pgDatabases = &testenv.Databases{
	Base: os.Getenv(postgresEnv),
	Migrate: func(url string) error {
		db, err := Open(context.Background(), Config{URL: url, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return err
		}
		return db.Close()
	},
}

// skipWithoutPostgres skips the test when postgresEnv is unset.
func skipWithoutPostgres(t *testing.T) {
	t.Helper()
	if os.Getenv(postgresEnv) == "" {
		t.Skipf("PostgreSQL conformance skipped: set %s (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)", postgresEnv)
	}
}

func TestMain(m *testing.M) {
	// Most tests run on both dialects side by side and spend their time
	// waiting on the database's commits and round trips, not on a CPU.
	testenv.WaitingParallel(8)
	// The template is migrated by the first test that asks for a
	// database, not in the background from here: the serial tests that
	// count allocations would count the migration's.
	leak.Main(m, pgDatabases.Close)
}

// openDBAt is openDB with the schema taken down to version, as an older
// build left it, for a test that migrates it up.
func openDBAt(t *testing.T, url string, version int64) *DB {
	t.Helper()
	db := openDB(t, url)
	_, unlock := migrateDownTo(t, db, version)
	unlock()
	return db
}

// migrateDownTo takes db's schema down to version, as an older build left
// it, and returns the migrations and the unlock of their lock, held.
func migrateDownTo(t *testing.T, db *DB, version int64) (*goose.Provider, func()) {
	t.Helper()
	provider, unlock, err := db.migrations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.DownTo(context.Background(), version); err != nil {
		unlock()
		t.Fatalf("migrate down to %d: %v", version, err)
	}
	return provider, unlock
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
	indexNow(t, db)
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
		payload, err := outboxPayload(r.Payload)
		if err != nil {
			t.Fatalf("outbox message %d: %v", r.ID, err)
		}
		msgs[i] = ordersync.OutboxMessage{ID: r.ID, Subject: r.Subject, MsgID: r.MsgID, Payload: payload}
	}
	return msgs
}

// indexNow runs the indexer to the end, so that the read side shows what
// was written before it.
func indexNow(t testing.TB, db *DB) {
	t.Helper()
	if _, err := db.IndexNow(context.Background()); err != nil {
		t.Fatalf("IndexNow: %v", err)
	}
}

// thoroughEnv, set to anything, runs the property tests larger: more
// random cases, bounds and arrivals. The default sizes hold every
// distinct case and boundary, at a size the suite's time allows.
const thoroughEnv = "ORDERSYNC_TEST_THOROUGH"

// thorough is n, or large when thoroughEnv is set.
func thorough(n, large int) int {
	if os.Getenv(thoroughEnv) != "" {
		return large
	}
	return n
}
