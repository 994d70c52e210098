package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/testenv"
)

// The two-store mirror that `ordersync-lab pages` times the back office's
// pages on. pagesBenchEnv, a number of orders per store (1000000 for the
// figures in docs/benchmarks.md), runs TestPagesMirror, which fills the
// SQLite file pagesBenchKeepEnv names and the PostgreSQL schema
// pagesBenchKeepPostgresEnv names (each only when named), and leaves them.
const (
	pagesBenchEnv             = "ORDERSYNC_BENCH_PAGES_ORDERS"
	pagesBenchKeepEnv         = "ORDERSYNC_BENCH_PAGES_KEEP"
	pagesBenchKeepPostgresEnv = "ORDERSYNC_BENCH_PAGES_KEEP_PG_SCHEMA"
)

// pagesStore is one store of the two-store mirror.
type pagesStore struct {
	account, name, currency, zone, country string
	phone                                  func(i int) string
}

// pagesStores are the mirror's stores: the two of `ordersync-lab pages`,
// one currency and zone each.
var pagesStores = []pagesStore{
	{ordersync.DefaultAccount, "La Esquina", "USD", "America/El_Salvador", "SV", func(i int) string { return fmt.Sprintf("+5037%07d", i) }},
	{"madrid", "La Plaza", "EUR", "Europe/Madrid", "ES", func(i int) string { return fmt.Sprintf("+346%08d", i) }},
}

var pagesBenchColumns = append(append([]string{}, benchQueryColumns...), "total_minor", "subtotal_minor")

// makePagesOrder is order i of n (both stores' orders, alternating, over a
// year from start): 30% pending, 40% paid, 17% finalized, 8% cancelled unpaid, 5%
// reversed (cancelled a day after the payment). Every paid order has a
// buyer, a phone as its store's country writes it and an authorization.
func makePagesOrder(rng *rand.Rand, i, n int, start time.Time) []any {
	st := pagesStores[(i-1)%len(pagesStores)]
	code := upstreamCode(i)
	created := start.Add(time.Duration(i) * (365 * 24 * time.Hour / time.Duration(n))).Add(time.Duration(rng.IntN(600)) * time.Second)
	status, reversed := ordersync.StatusPending, false
	switch r := rng.IntN(100); {
	case r < 30:
	case r < 70:
		status = ordersync.StatusPaid
	case r < 87:
		status = ordersync.StatusFinalized
	case r < 95:
		status = ordersync.StatusCancelled
	default:
		status, reversed = ordersync.StatusCancelled, true
	}
	cents := int64(100 + rng.ExpFloat64()*6000)
	if cents > 200000 {
		cents = 100 + rng.Int64N(200000)
	}
	total := ordersync.MustAmount(fmt.Sprintf("%d.%02d", cents/100, cents%100))
	doc := fmt.Sprintf(benchDoc, 100000+i, code, code, code, "bench", status, i, code)
	var (
		paidAt                          any
		hasPayment, paidFired           bool
		name, phone, email, auth, phKey string
		changed                         = created
		transitions                     = int64(1)
	)
	if status.IsPaidState() || reversed {
		first, last := benchFirstNames[rng.IntN(len(benchFirstNames))], benchLastNames[rng.IntN(len(benchLastNames))]
		name = first + " " + last
		if rng.IntN(3) == 0 {
			name += " " + benchLastNames[rng.IntN(len(benchLastNames))]
		}
		tokens := ordersync.NameTokens(name)
		phone = st.phone(i)
		phKey = ordersync.PhoneKey(phone, st.country)
		email = fmt.Sprintf("%s.%s%d@example.com", tokens[0], tokens[1], i)
		auth = fmt.Sprintf("%06d", rng.IntN(1000000))
		at := created.Add(time.Duration(60+rng.IntN(7200)) * time.Second)
		paidAt, hasPayment, paidFired, changed, transitions = dbTime(at), true, true, at, 2
		if reversed {
			changed, transitions = at.Add(24*time.Hour), 3
		}
	} else if status == ordersync.StatusCancelled {
		changed, transitions = created.Add(24*time.Hour), 2
	}
	ref := fmt.Sprintf("ped_%08x", uint32(i)*2654435761)
	return []any{
		int64(i), st.account, code, strconv.Itoa(100000 + i), ref, "Pedido " + code, string(status),
		total, total, totalKey(total), dbTime(created), st.name, st.currency, st.zone, hasPayment, auth, name, phone, email,
		doc, "h", dbTime(created), dbTime(created), 1, int64(i), paidFired, transitions, paidAt, dbTime(changed), st.country,
		ordersync.IdentifierKey(email), phKey, ordersync.IdentifierKey(ref), cents, cents,
	}
}

// TestPagesMirror fills the two-store mirror (pagesBenchEnv orders per
// store) where pagesBenchKeepEnv and pagesBenchKeepPostgresEnv say, then
// runs the indexer over every order to completion (every order marked
// changed, as RebuildReadSide does on an empty read side), and adds what the
// operator's pages list: 30,000 webhooks in the event log, 300 dead letters per store, two endpoints (those `ordersync-lab
// pages` configures) with a day's 20,000 deliveries and 200 failed ones. A
// mirror that holds orders already is left as it is. It measures: it is
// skipped unless pagesBenchEnv is set.
func TestPagesMirror(t *testing.T) {
	n := benchOrders(t, pagesBenchEnv, "fill the pages' two-store mirror")
	t.Run(DialectSQLite, func(t *testing.T) {
		keep := os.Getenv(pagesBenchKeepEnv)
		if keep == "" {
			t.Skipf("set %s to the SQLite file to fill", pagesBenchKeepEnv)
		}
		fillPagesMirror(t, "sqlite:"+keep, n)
	})
	t.Run(DialectPostgres, func(t *testing.T) {
		base, schema := os.Getenv(postgresEnv), os.Getenv(pagesBenchKeepPostgresEnv)
		if base == "" || schema == "" {
			t.Skipf("set %s and %s to the schema to fill", postgresEnv, pagesBenchKeepPostgresEnv)
		}
		fillPagesMirror(t, testenv.KeptSchema(t, base, schema), n)
	})
}

func fillPagesMirror(t *testing.T, url string, perStore int) {
	ctx := context.Background()
	db := openDB(t, url)
	var have int
	if err := db.read.GetContext(ctx, &have, `SELECT COUNT(*) FROM orders`); err != nil {
		t.Fatal(err)
	}
	n := perStore * len(pagesStores)
	// The year ends now, so that the console's default days (today,
	// yesterday, the last 30) hold orders as on a live mirror.
	end := time.Now().UTC().Truncate(time.Hour)
	if have > 0 {
		// A fill stopped after its orders is finished; a finished one is
		// left as it is.
		var logged int
		if err := db.read.GetContext(ctx, &logged, `SELECT COUNT(*) FROM event_log`); err != nil {
			t.Fatal(err)
		}
		if logged > 0 {
			t.Logf("%s: the mirror holds %d orders already: left as it is", db.dialect, have)
			return
		}
		finishPagesMirror(t, db, n, end)
		return
	}
	rng := rand.New(rand.NewPCG(32, 1))
	start := end.AddDate(-1, 0, 0)
	overriding := ""
	if db.dialect == DialectPostgres {
		overriding = " OVERRIDING SYSTEM VALUE"
	}
	insert := rowsSQL{prefix: "INSERT INTO orders (" + strings.Join(pagesBenchColumns, ", ") + ")" + overriding + " VALUES ", cols: len(pagesBenchColumns)}
	began := time.Now()
	const perTx = 5000
	for from := 1; from <= n; from += perTx {
		var orders [][]any
		for i := from; i < from+perTx && i <= n; i++ {
			orders = append(orders, makePagesOrder(rng, i, n, start))
		}
		if err := db.inTx(ctx, "load bench orders", func(tx *sqlx.Tx) error { return db.execRows(ctx, tx, insert, orders) }); err != nil {
			t.Fatal(err)
		}
		if from%200000 == 1 && from > 1 {
			t.Logf("%s: %d orders loaded in %s", db.dialect, from-1, time.Since(began).Round(time.Second))
		}
	}
	for _, q := range []string{
		`INSERT INTO order_line_items (order_row, position, product_id, sku, name, price, promo_price, quantity, image_url, sub_total)
SELECT id, 0, '884213', 'COMBO-CLASICO', 'Combo Clásico', 6.50, NULL, 2, '', 13.00 FROM orders`,
		`INSERT INTO order_line_items (order_row, position, product_id, sku, name, price, promo_price, quantity, image_url, sub_total)
SELECT id, 1, '884220', 'SODA-600', 'Refresco 600 ml', 1.25, 0.99, 1, '', 0.99 FROM orders`,
		`INSERT INTO order_metadata (order_row, position, name, value) SELECT id, 0, 'numero_orden', 'A-' || id FROM orders`,
		// The payment, then the order's last transition: a finalized order
		// finalized when it was paid, a reversed one cancelled after it.
		`INSERT INTO status_history (order_row, from_status, to_status, fetch_seq, at, cause)
SELECT id, 'PENDING', 'PAID', 2, paid_at, 'fetch' FROM orders WHERE paid_at IS NOT NULL AND status <> 'FINALIZED'`,
		`INSERT INTO status_history (order_row, from_status, to_status, fetch_seq, at, cause)
SELECT id, CASE WHEN status = 'CANCELLED' AND paid_at IS NOT NULL THEN 'PAID' ELSE 'PENDING' END, status, 3, status_changed_at, 'fetch'
FROM orders WHERE status IN ('FINALIZED', 'CANCELLED')`,
	} {
		if _, err := db.write.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%s: %d orders in %d stores loaded in %s", db.dialect, n, len(pagesStores), time.Since(began).Round(time.Second))
	if db.dialect == DialectPostgres {
		// What autovacuum does on its own after a load like this one; the
		// indexer's reads by row id are planned as scans without it.
		// SQLite keeps no statistics unless told, and ordersync never does.
		if _, err := db.write.ExecContext(ctx, `VACUUM ANALYZE`); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.write.ExecContext(ctx, db.rebind(`INSERT INTO mirror_changes (order_row, at) SELECT id, ? FROM orders ORDER BY id`), dbTime(time.Now())); err != nil {
		t.Fatal(err)
	}
	finishPagesMirror(t, db, n, end)
}

// finishPagesMirror runs the indexer until no change waits, then adds the
// operator's rows.
func finishPagesMirror(t *testing.T, db *DB, n int, end time.Time) {
	ctx := context.Background()
	began := time.Now()
	indexed, err := db.IndexNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: the indexer took %d changes in %s", db.dialect, indexed, time.Since(began).Round(time.Second))
	addPagesOperatorRows(t, db, n, end)
}

// pagesEndpoints are the endpoints `ordersync-lab pages` configures.
var pagesEndpoints = []string{"erp", "warehouse"}

// addPagesOperatorRows adds the event log's, dead letters' and deliveries'
// rows of the operator's pages, at the mirror's end: the webhooks over the
// hour after it too, so that the overview's last 5 minutes hold about
// 2,300 of them while the pages are timed.
func addPagesOperatorRows(t *testing.T, db *DB, n int, end time.Time) {
	ctx := context.Background()
	var events []ordersync.EventRecord
	for i := range 30000 {
		st := pagesStores[i%len(pagesStores)]
		events = append(events, ordersync.EventRecord{MsgID: fmt.Sprint("bench-ev-", i), Account: st.account,
			ReceivedAt: end.Add(time.Hour - time.Duration(i)*130*time.Millisecond), Type: ordersync.EventUpdated,
			OrderCode: upstreamCode(n - i), Outcome: ordersync.OutcomeSynced})
		if len(events) == 500 {
			if err := db.RecordEvents(ctx, events); err != nil {
				t.Fatal(err)
			}
			events = events[:0]
		}
	}
	for i := range 600 {
		st := pagesStores[i%len(pagesStores)]
		if _, err := db.AddDeadLetter(ctx, ordersync.DeadLetter{MsgID: fmt.Sprint("bench-dl-", i), Account: st.account,
			Reason: ordersync.ReasonRetriesExhausted, Attempts: 5, LastError: "upstream: 503 Service Unavailable",
			OrderCode: upstreamCode(n - 2*i), Body: []byte(`{"type":"Updated"}`), CreatedAt: end.Add(-time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	var recs []ordersync.DeliveryRecord
	// A day's deliveries: about 2,700 orders a day per store, each paid
	// and then finalized or cancelled, to both endpoints.
	for i := range 20000 {
		st := pagesStores[i%len(pagesStores)]
		recs = append(recs, ordersync.DeliveryRecord{WebhookID: fmt.Sprint("bench-wh-", i), EndpointID: pagesEndpoints[i%2],
			Event: ordersync.HookOrderPaid, Account: st.account, OrderCode: upstreamCode(n - i), OrderStatus: ordersync.StatusPaid,
			Outcome: ordersync.DeliveryDelivered, Attempts: 1, Status: 204, At: end.Add(-time.Duration(i) * 4 * time.Second)})
		if len(recs) == 1000 {
			if err := db.RecordDeliveries(ctx, recs); err != nil {
				t.Fatal(err)
			}
			recs = recs[:0]
		}
	}
	for i := range 200 {
		st := pagesStores[i%len(pagesStores)]
		if _, err := db.AddDeliveryDeadLetter(ctx, ordersync.DeliveryDeadLetter{EndpointID: pagesEndpoints[0], Event: ordersync.HookOrderPaid,
			WebhookID: fmt.Sprint("bench-failed-", i), Account: st.account, OrderCode: upstreamCode(n - 3*i), Attempts: 8,
			LastStatus: 500, LastBody: "internal error", Body: []byte(`{}`), CreatedAt: end.Add(-time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
}
