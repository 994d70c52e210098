package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/rusage"
	"github.com/ordersync/ordersync/internal/testenv"
)

// queryBenchEnv, set to a number of orders (1000000 for the figures in
// docs/benchmarks.md), runs TestOrderQueryTimes. A second variable,
// ORDERSYNC_BENCH_QUERY_KEEP, keeps the SQLite file (under its path) and
// reuses it when it exists, so that tuning does not reload.
const (
	queryBenchEnv     = "ORDERSYNC_BENCH_QUERY_ORDERS"
	queryBenchKeepEnv = "ORDERSYNC_BENCH_QUERY_KEEP"
	// queryBenchKeepPostgresEnv names a PostgreSQL schema that keeps the
	// mirror (created when missing, never dropped), reused like the file.
	queryBenchKeepPostgresEnv = "ORDERSYNC_BENCH_QUERY_KEEP_PG_SCHEMA"
	// queryBenchCasesEnv, a regular expression, times only the cases whose
	// names it matches (and neither the tenth page nor the count unless it
	// matches "tenth page" or "count"), so that a run on a kept mirror
	// that tunes one query stays short.
	queryBenchCasesEnv = "ORDERSYNC_BENCH_QUERY_CASES"
)

// The mirror's make-up in the query benchmark.
var (
	benchFirstNames = []string{"José", "María", "Juan", "Ana", "Luis", "Sofía", "Carlos", "Lucía", "Jorge", "Martín", "Valentina", "Andrés",
		"Camila", "Óscar", "Elena", "Raúl", "Inés", "Tomás", "Julia", "Héctor", "Paula", "Ramón", "Daniela", "Iván", "Gabriela", "Ángel",
		"Natalia", "Sebastián", "Isabel", "Nicolás", "Mónica", "Rubén", "Verónica", "Adrián", "Beatriz", "Joaquín", "Clara", "Matías", "Irene", "Zoë"}
	benchLastNames = []string{"Peña", "Núñez", "Hernández", "García", "López", "Martínez", "Rodríguez", "González", "Pérez", "Sánchez", "Ramírez",
		"Flores", "Gómez", "Díaz", "Reyes", "Morales", "Jiménez", "Ruiz", "Álvarez", "Romero", "Torres", "Vásquez", "Castillo", "Ortiz",
		"Gutiérrez", "Chávez", "Ramos", "Mendoza", "Aguilar", "Medina", "Castro", "Vargas", "Rojas", "Muñoz", "Herrera", "Guerrero", "Cruz",
		"Ibáñez", "Salazar", "Molina", "Delgado", "Campos", "Cabrera", "Fuentes", "Navarro", "Cortés", "Orellana", "Quintanilla", "Zelaya", "Escobar"}
)

// benchQueryOrder is order i of n: its orderColumns subset and whether it
// was paid (then it has a buyer).
type benchQueryOrder struct {
	values []any
	tokens []string
}

var benchQueryColumns = []string{"id", "account", "order_code", "order_id", "order_reference", "name", "status", "subtotal", "total", "total_key",
	"created_at", "store_name", "store_currency_code", "store_timezone", "has_payment", "payment_authorization_code", "buyer_name",
	"buyer_phone", "buyer_email", "raw_document", "document_hash", "first_seen_at", "last_synced_at", "fetch_count", "fetch_seq",
	"paid_fired", "status_transitions", "paid_at", "status_changed_at", "store_country_code",
	// Added by migration 23, last: a mirror loaded at an older version
	// leaves them out, for the migration's backfill to fill.
	"buyer_email_key", "buyer_phone_key", "order_reference_key"}

// benchIdentifierKeys is how many of benchQueryColumns migration 23 added.
const benchIdentifierKeys = 3

// benchQueryStart is the first order's creation; the orders span a year.
var benchQueryStart = time.Date(2025, 11, 1, 0, 0, 0, 0, time.UTC)

func makeBenchQueryOrder(rng *rand.Rand, i, n int) benchQueryOrder {
	code := upstreamCode(i)
	created := benchQueryStart.Add(time.Duration(i) * (365 * 24 * time.Hour / time.Duration(n))).Add(time.Duration(rng.IntN(600)) * time.Second)
	var status ordersync.Status
	switch r := rng.IntN(100); {
	case r < 35:
		status = ordersync.StatusPending
	case r < 80:
		status = ordersync.StatusPaid
	case r < 90:
		status = ordersync.StatusCancelled
	default:
		status = ordersync.StatusFinalized
	}
	currency := "USD"
	switch r := rng.IntN(100); {
	case r < 8:
		currency = "EUR"
	case r < 10:
		currency = "MXN"
	}
	// Totals from 1.00 to about 2,000, most of them small.
	cents := int64(100 + rng.ExpFloat64()*6000)
	if cents > 200000 {
		cents = 100 + rng.Int64N(200000)
	}
	total := ordersync.MustAmount(fmt.Sprintf("%d.%02d", cents/100, cents%100))
	doc := fmt.Sprintf(benchDoc, 100000+i, code, code, code, "bench", status, i, code)
	var (
		paidAt                   any
		hasPayment               bool
		name, phone, email, auth string
		tokens                   []string
		statusChangedAt          = created
		paidFired                = false
		transitions              = int64(1)
	)
	if status.IsPaidState() {
		first, last := benchFirstNames[rng.IntN(len(benchFirstNames))], benchLastNames[rng.IntN(len(benchLastNames))]
		name = first + " " + last
		if rng.IntN(3) == 0 {
			name += " " + benchLastNames[rng.IntN(len(benchLastNames))]
		}
		tokens = ordersync.NameTokens(name)
		phone = fmt.Sprintf("+5037%07d", i)
		email = fmt.Sprintf("%s.%s%d@example.com", tokens[0], tokens[1], i)
		auth = fmt.Sprintf("%06d", rng.IntN(1000000))
		at := dbTime(created.Add(time.Duration(60+rng.IntN(7200)) * time.Second))
		paidAt, hasPayment, paidFired, statusChangedAt, transitions = at, true, true, at, 2
	} else if status == ordersync.StatusCancelled {
		statusChangedAt = created.Add(24 * time.Hour)
		transitions = 2
	}
	ref := fmt.Sprintf("ped_%08x", uint32(i)*2654435761)
	return benchQueryOrder{values: []any{
		int64(i), ordersync.DefaultAccount, code, strconv.Itoa(100000 + i), ref, "Pedido " + code, string(status),
		total, total, totalKey(total), dbTime(created), "La Esquina", currency, "America/El_Salvador", hasPayment, auth, name, phone, email,
		doc, "h", dbTime(created), dbTime(created), 1, int64(i), paidFired, transitions, paidAt, dbTime(statusChangedAt), "SV",
		ordersync.IdentifierKey(email), ordersync.PhoneKey(phone, "SV"), ordersync.IdentifierKey(ref),
	}, tokens: tokens}
}

// loadBenchQueryOrders fills an empty mirror with n orders through a bulk
// path: multi-row inserts of the columns the listing reads, the name
// tokens the upsert would write, and two line items and a metadata entry
// per order copied in SQL. At a version before migration 9 it writes
// neither total_key nor name tokens, which the migration adds; before
// migration 13, the name tokens without their orders' values.
func loadBenchQueryOrders(t *testing.T, db *DB, n int, version int64) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(20, 26))
	overriding := ""
	if db.dialect == DialectPostgres {
		overriding = " OVERRIDING SYSTEM VALUE"
	}
	columns := benchQueryColumns
	keyAt := slices.Index(columns, "total_key")
	version8 := version > 0 && version < 9
	tokenKeys := tokenKeyColumns
	if version > 0 && version < 13 {
		tokenKeys = nil
	}
	insertWords := rowsSQL{prefix: "INSERT INTO order_name_tokens (account, token, order_row" + strings.Repeat(", ", min(len(tokenKeys), 1)) +
		strings.Join(tokenKeys, ", ") + ") VALUES ", cols: 3 + len(tokenKeys)}
	keysFrom := len(columns)
	if version > 0 && version < 23 {
		keysFrom -= benchIdentifierKeys
		columns = columns[:keysFrom]
	}
	if version8 {
		columns = slices.Delete(slices.Clone(columns), keyAt, keyAt+1)
	}
	insertOrders := rowsSQL{prefix: "INSERT INTO orders (" + strings.Join(columns, ", ") + ")" + overriding + " VALUES ", cols: len(columns)}
	const perTx = 5000
	start := time.Now()
	for from := 1; from <= n; from += perTx {
		var orders, tokens [][]any
		for i := from; i < from+perTx && i <= n; i++ {
			o := makeBenchQueryOrder(rng, i, n)
			o.values = o.values[:keysFrom]
			if version8 {
				orders = append(orders, slices.Delete(o.values, keyAt, keyAt+1))
				continue
			}
			orders = append(orders, o.values)
			for _, tk := range o.tokens {
				row := []any{ordersync.DefaultAccount, tk, int64(i)}
				for _, c := range tokenKeys {
					row = append(row, o.values[slices.Index(benchQueryColumns, c)])
				}
				tokens = append(tokens, row)
			}
		}
		err := db.inTx(ctx, "load bench orders", func(tx *sqlx.Tx) error {
			if err := db.execRows(ctx, tx, insertOrders, orders); err != nil {
				return err
			}
			return db.execRows(ctx, tx, insertWords, tokens)
		})
		if err != nil {
			t.Fatal(err)
		}
		if from%100000 == 1 && from > 1 {
			t.Logf("%s: %d orders loaded in %s", db.dialect, from-1, time.Since(start).Round(time.Second))
		}
	}
	for _, q := range []string{
		`INSERT INTO order_line_items (order_row, position, product_id, sku, name, price, promo_price, quantity, image_url, sub_total)
SELECT id, 0, '884213', 'COMBO-CLASICO', 'Combo Clásico', 6.50, NULL, 2, '', 13.00 FROM orders`,
		`INSERT INTO order_line_items (order_row, position, product_id, sku, name, price, promo_price, quantity, image_url, sub_total)
SELECT id, 1, '884220', 'SODA-600', 'Refresco 600 ml', 1.25, 0.99, 1, '', 0.99 FROM orders`,
		`INSERT INTO order_metadata (order_row, position, name, value) SELECT id, 0, 'numero_orden', 'A-' || id FROM orders`,
		// Each order's last transition, which the daily totals read: a
		// finalized order finalized when it was paid, a cancelled one a day
		// after its creation.
		`INSERT INTO status_history (order_row, from_status, to_status, fetch_seq, at, cause)
SELECT id, 'PENDING', status, 2, status_changed_at, 'fetch' FROM orders WHERE status <> 'PENDING'`,
	} {
		if _, err := db.write.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if db.dialect == DialectPostgres {
		// What autovacuum does on its own after a load like this one.
		if _, err := db.write.ExecContext(ctx, `VACUUM ANALYZE`); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%s: %d orders loaded in %s", db.dialect, n, time.Since(start).Round(time.Second))
}

// queryCase is one filter of the benchmark; filter may vary with the run.
type queryCase struct {
	name   string
	combo  bool
	filter func(run int, rng *rand.Rand) ordersync.OrderFilter
}

func benchQueryCases(n int) []queryCase {
	acct := func(f ordersync.OrderFilter) ordersync.OrderFilter { f.Account = ordersync.DefaultAccount; return f }
	pick := func(rng *rand.Rand) int { return 1 + rng.IntN(n) }
	day := func(rng *rand.Rand) time.Time {
		return benchQueryStart.AddDate(0, 0, rng.IntN(360))
	}
	amount := func(s string) *ordersync.Amount { a := ordersync.MustAmount(s); return &a }
	q := func(s string) func(int, *rand.Rand) ordersync.OrderFilter {
		return func(int, *rand.Rand) ordersync.OrderFilter { return acct(ordersync.OrderFilter{Q: s}) }
	}
	sorted := func(s ordersync.OrderSort) func(int, *rand.Rand) ordersync.OrderFilter {
		return func(int, *rand.Rand) ordersync.OrderFilter { return acct(ordersync.OrderFilter{Sort: s}) }
	}
	first := func(rng *rand.Rand) string {
		return strings.ToLower(ordersync.NameTokens(benchFirstNames[rng.IntN(len(benchFirstNames))])[0])
	}
	last := func(rng *rand.Rand) string {
		return ordersync.NameTokens(benchLastNames[rng.IntN(len(benchLastNames))])[0]
	}
	return []queryCase{
		{"no filter (created_desc)", false, func(int, *rand.Rand) ordersync.OrderFilter { return acct(ordersync.OrderFilter{}) }},
		{"q = order code", false, func(_ int, rng *rand.Rand) ordersync.OrderFilter {
			return acct(ordersync.OrderFilter{Q: upstreamCode(pick(rng))})
		}},
		{"q = order id", false, func(_ int, rng *rand.Rand) ordersync.OrderFilter {
			return acct(ordersync.OrderFilter{Q: strconv.Itoa(100000 + pick(rng))})
		}},
		{"q = buyer phone", false, func(_ int, rng *rand.Rand) ordersync.OrderFilter {
			return acct(ordersync.OrderFilter{Q: fmt.Sprintf("+5037%07d", pick(rng))})
		}},
		{"q = buyer phone as said (7000-0000)", false, func(_ int, rng *rand.Rand) ordersync.OrderFilter {
			n := fmt.Sprintf("7%07d", pick(rng))
			return acct(ordersync.OrderFilter{Q: n[:4] + "-" + n[4:]})
		}},
		{"q = buyer email in capitals", false, func(_ int, rng *rand.Rand) ordersync.OrderFilter {
			return acct(ordersync.OrderFilter{Q: strings.ToUpper(fmt.Sprintf("%s.%s%d@example.com", first(rng), last(rng), pick(rng)))})
		}},
		{"q = reference beginning, capitals", false, func(_ int, rng *rand.Rand) ordersync.OrderFilter {
			return acct(ordersync.OrderFilter{Q: strings.ToUpper(fmt.Sprintf("ped_%08x", uint32(pick(rng))*2654435761)[:9])})
		}},
		{"q = reference beginning shared by all", false, q("PED_")},
		{"q = an amount (12.50)", false, q("12.50")},
		{"q = authorization code", false, func(_ int, rng *rand.Rand) ordersync.OrderFilter {
			return acct(ordersync.OrderFilter{Q: fmt.Sprintf("%06d", rng.IntN(1000000))})
		}},
		{"q = first name (one in 40 buyers)", false, func(_ int, rng *rand.Rand) ordersync.OrderFilter { return acct(ordersync.OrderFilter{Q: first(rng)}) }},
		{"q = surname, upper case with accent", false, q("NÚÑEZ")},
		{"q = name prefix (jos)", false, q("jos")},
		{"q = two words (first + surname)", false, func(_ int, rng *rand.Rand) ordersync.OrderFilter {
			return acct(ordersync.OrderFilter{Q: first(rng) + " " + last(rng)})
		}},
		{"q = no match", false, q("zzyzx")},
		{"status = CANCELLED", false, func(int, *rand.Rand) ordersync.OrderFilter {
			return acct(ordersync.OrderFilter{Statuses: []ordersync.Status{ordersync.StatusCancelled}})
		}},
		{"created range (one day)", false, func(_ int, rng *rand.Rand) ordersync.OrderFilter {
			d := day(rng)
			return acct(ordersync.OrderFilter{CreatedFrom: d, CreatedTo: d.AddDate(0, 0, 1)})
		}},
		{"paid range (one day)", false, func(_ int, rng *rand.Rand) ordersync.OrderFilter {
			d := day(rng)
			return acct(ordersync.OrderFilter{PaidFrom: d, PaidTo: d.AddDate(0, 0, 1)})
		}},
		{"currency = MXN (2%)", false, func(int, *rand.Rand) ordersync.OrderFilter { return acct(ordersync.OrderFilter{Currency: "MXN"}) }},
		{"minTotal = 1000 (rare)", false, func(int, *rand.Rand) ordersync.OrderFilter {
			return acct(ordersync.OrderFilter{MinTotal: amount("1000")})
		}},
		{"maxTotal = 2.00 (rare)", false, func(int, *rand.Rand) ordersync.OrderFilter {
			return acct(ordersync.OrderFilter{MaxTotal: amount("2.00")})
		}},
		{"sort = created_asc", false, sorted(ordersync.SortCreatedAsc)},
		{"sort = paid_desc", false, sorted(ordersync.SortPaidDesc)},
		{"sort = paid_asc", false, sorted(ordersync.SortPaidAsc)},
		{"sort = total_desc", false, sorted(ordersync.SortTotalDesc)},
		{"sort = total_asc", false, sorted(ordersync.SortTotalAsc)},
		{"name + status + created month", true, func(_ int, rng *rand.Rand) ordersync.OrderFilter {
			d := day(rng)
			return acct(ordersync.OrderFilter{Q: first(rng), Statuses: []ordersync.Status{ordersync.StatusPaid}, CreatedFrom: d, CreatedTo: d.AddDate(0, 1, 0)})
		}},
		{"currency + total range, sort paid_desc", true, func(int, *rand.Rand) ordersync.OrderFilter {
			return acct(ordersync.OrderFilter{Currency: "EUR", MinTotal: amount("100"), MaxTotal: amount("500"), Sort: ordersync.SortPaidDesc})
		}},
		{"status + created week, sort total_desc", true, func(_ int, rng *rand.Rand) ordersync.OrderFilter {
			d := day(rng)
			return acct(ordersync.OrderFilter{Statuses: []ordersync.Status{ordersync.StatusFinalized}, CreatedFrom: d, CreatedTo: d.AddDate(0, 0, 7), Sort: ordersync.SortTotalDesc})
		}},
		{"paid day + currency + minTotal", true, func(_ int, rng *rand.Rand) ordersync.OrderFilter {
			d := day(rng)
			return acct(ordersync.OrderFilter{PaidFrom: d, PaidTo: d.AddDate(0, 0, 1), Currency: "USD", MinTotal: amount("50")})
		}},
	}
}

// TestOrderQueryTimes measures the first page (the default 100 orders) of
// every filter of the listing on a mirror of ORDERSYNC_BENCH_QUERY_ORDERS
// orders, and the tenth page by cursor and the exact count, each 40 times
// after one warming run, and logs the p50 and p95 against the targets (50
// ms for one filter, 200 ms for a combination). It measures: it is skipped
// unless queryBenchEnv is set.
func TestOrderQueryTimes(t *testing.T) {
	n := benchOrders(t, queryBenchEnv, "time the order queries")
	only, err := regexp.Compile(os.Getenv(queryBenchCasesEnv))
	if err != nil {
		t.Fatalf("%s: %v", queryBenchCasesEnv, err)
	}
	test := func(t *testing.T, url string) {
		ctx := context.Background()
		db := openBenchQueryMirror(t, url, n)
		const runs = 40
		// cpu is this process's CPU time per query of the last case: on
		// SQLite the whole query's, on PostgreSQL the client's only. On a
		// shared machine it varies far less than the elapsed times.
		var cpu time.Duration
		report := func(name string, limit string, times []time.Duration, rows int) {
			slices.Sort(times)
			p50, p95 := times[len(times)/2], times[(len(times)*95+99)/100-1]
			t.Logf("| %s | %s | %d | %.1f | %.1f | %s | cpu %.1f |", db.dialect, name, rows, ms(p50), ms(p95), limit, ms(cpu))
		}
		cpuOf := func(f func()) {
			before, err := rusage.CPU()
			if err != nil {
				t.Fatal(err)
			}
			f()
			after, err := rusage.CPU()
			if err != nil {
				t.Fatal(err)
			}
			cpu = (after - before) / runs
		}
		for _, c := range benchQueryCases(n) {
			if !only.MatchString(c.name) {
				continue
			}
			rng := rand.New(rand.NewPCG(1, 2))
			times := make([]time.Duration, 0, runs)
			rows := 0
			if _, err := db.ListOrders(ctx, c.filter(0, rng)); err != nil { // warming
				t.Fatalf("%s: %v", c.name, err)
			}
			cpuOf(func() {
				for run := 1; run <= runs; run++ {
					f := c.filter(run, rng)
					start := time.Now()
					page, err := db.ListOrders(ctx, f)
					if err != nil {
						t.Fatalf("%s: %v", c.name, err)
					}
					times = append(times, time.Since(start))
					rows += len(page.Orders)
				}
			})
			target := "≤ 50 ms"
			if c.combo {
				target = "≤ 200 ms"
			}
			report(c.name, target, times, rows/runs)
		}
		// The tenth page by cursor, and the exact count.
		if !only.MatchString("tenth page by cursor") {
			return
		}
		f := ordersync.OrderFilter{Account: ordersync.DefaultAccount}
		for range 9 {
			page, err := db.ListOrders(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			f.After = page.Next
		}
		var times []time.Duration
		cpuOf(func() {
			for range runs {
				start := time.Now()
				if _, err := db.ListOrders(ctx, f); err != nil {
					t.Fatal(err)
				}
				times = append(times, time.Since(start))
			}
		})
		report("tenth page by cursor", "≤ 50 ms", times, 100)
		if !only.MatchString("count=exact") {
			return
		}
		times = times[:0]
		cpu = 0
		for range 5 {
			start := time.Now()
			page, err := db.ListOrders(ctx, ordersync.OrderFilter{Account: ordersync.DefaultAccount, Count: true, Limit: 1})
			if err != nil || page.Total == nil || *page.Total != n {
				t.Fatalf("count: %v %v", page.Total, err)
			}
			times = append(times, time.Since(start))
		}
		report("count=exact, no filter", "(opt-in)", times, 1)
	}
	t.Run(DialectSQLite, func(t *testing.T) { test(t, benchQueryURL(t, DialectSQLite)) })
	t.Run(DialectPostgres, func(t *testing.T) { test(t, benchQueryURL(t, DialectPostgres)) })
}

// benchOrders is the number of orders env names for a measurement, which
// is skipped, saying what the number is for, while env is not set.
func benchOrders(t *testing.T, env, what string) int {
	t.Helper()
	n, _ := strconv.Atoi(os.Getenv(env))
	if n <= 0 {
		t.Skipf("set %s to a number of orders to %s", env, what)
	}
	return n
}

// openBenchQueryMirror opens the query benchmarks' mirror at url, loading
// n orders into it when it is empty; a kept mirror must hold n already.
func openBenchQueryMirror(t *testing.T, url string, n int) *DB {
	t.Helper()
	db := openDB(t, url)
	var have int
	if err := db.read.GetContext(context.Background(), &have, `SELECT COUNT(*) FROM orders`); err != nil {
		t.Fatal(err)
	}
	if have == 0 {
		loadBenchQueryOrders(t, db, n, 0)
	} else if have != n {
		t.Fatalf("the kept mirror holds %d orders, not %d", have, n)
	}
	return db
}

// benchQueryURL is the database of the query benchmarks on dialect: the
// kept SQLite file or PostgreSQL schema when one is named, else a fresh one.
func benchQueryURL(t *testing.T, dialect string) string {
	if dialect == DialectSQLite {
		keep := os.Getenv(queryBenchKeepEnv)
		switch {
		case keep == "":
			return sqliteURL(t)
		case strings.HasPrefix(keep, "file:"): // a URI with parameters, such as _cache_size
			return keep
		}
		return "sqlite:" + keep
	}
	schema := os.Getenv(queryBenchKeepPostgresEnv)
	if schema == "" {
		return postgresURL(t)
	}
	base := os.Getenv(postgresEnv)
	if base == "" {
		t.Skipf("set %s", postgresEnv)
	}
	return testenv.KeptSchema(t, base, schema)
}

// migrationSearchBenchEnv, set to a number of orders (1000000 for the
// figure in docs/benchmarks.md), runs TestMigrationSearchTime.
const migrationSearchBenchEnv = "ORDERSYNC_BENCH_MIGRATION_SEARCH_ORDERS"

// TestMigrationSearchTime times migration 9 and its backfill (total_key
// and the name tokens of every order) on a mirror at version 8 filled as
// TestOrderQueryTimes fills one. It measures: it is skipped unless
// migrationSearchBenchEnv is set.
func TestMigrationSearchTime(t *testing.T) {
	n := benchOrders(t, migrationSearchBenchEnv, "time migration 9")
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDBAt(t, url, 8)
		loadBenchQueryOrders(t, db, n, 8)
		start := time.Now()
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("migrate up: %v", err)
		}
		t.Logf("%s: migration 9 and its backfill on %d orders took %s", db.dialect, n, time.Since(start).Round(time.Millisecond))
		var tokens, keys int
		if err := db.read.GetContext(ctx, &tokens, `SELECT COUNT(*) FROM order_name_tokens`); err != nil || tokens == 0 {
			t.Fatalf("%d name tokens after the backfill: %v", tokens, err)
		}
		if err := db.read.GetContext(ctx, &keys, `SELECT COUNT(*) FROM orders WHERE total_key IS NOT NULL`); err != nil || keys != n {
			t.Fatalf("%d total keys after the backfill, want %d: %v", keys, n, err)
		}
	})
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// migrationBackfillBenchEnv, set to a number of orders (1000000 for the
// figures in docs/benchmarks.md), runs TestMigrationBackfillTimes.
const migrationBackfillBenchEnv = "ORDERSYNC_BENCH_MIGRATION_BACKFILL_ORDERS"

// TestMigrationBackfillTimes times, on a mirror at version 10 filled as
// TestOrderQueryTimes fills one, migration 11 and its backfill of the
// minor-unit columns, then migration 13 and its backfill of the name
// words' copies of their orders' values, each apart. It measures: it is
// skipped unless migrationBackfillBenchEnv is set.
func TestMigrationBackfillTimes(t *testing.T) {
	n := benchOrders(t, migrationBackfillBenchEnv, "time migrations 11 and 13")
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		provider, unlock := migrateDownTo(t, db, 10)
		defer unlock()
		loadBenchQueryOrders(t, db, n, 10)
		timed := func(what string, step func() error) {
			start := time.Now()
			if err := step(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			t.Logf("%s: %s on %d orders took %s", db.dialect, what, n, time.Since(start).Round(time.Millisecond))
		}
		timed("migration 11", func() error { _, err := provider.UpTo(ctx, 11); return err })
		timed("the minor-unit backfill", func() error { return db.backfillMinorUnits(ctx) })
		timed("migration 13", func() error { _, err := provider.Up(ctx); return err })
		timed("the name words' backfill", func() error { return db.backfillNameTokenKeys(ctx) })
		var minor, empty int
		if err := db.read.GetContext(ctx, &minor, `SELECT COUNT(*) FROM orders WHERE total_minor IS NOT NULL`); err != nil || minor != n {
			t.Errorf("%d orders with total_minor, want %d: %v", minor, n, err)
		}
		if err := db.read.GetContext(ctx, &empty, `SELECT COUNT(*) FROM order_name_tokens WHERE created_at IS NULL`); err != nil || empty != 0 {
			t.Errorf("%d name words without their order's values: %v", empty, err)
		}
	})
}
