package store

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// explain is the plan of query in db's dialect, a line per step; on
// PostgreSQL with sequential scans off, so that the plan says which index
// the query can seek where a small table would rather be read whole.
func explain(t *testing.T, db *DB, query string, args ...any) []string {
	t.Helper()
	ctx := context.Background()
	var plan []string
	err := db.inReadTx(ctx, "explain", func(tx *sqlx.Tx) error {
		if db.dialect == DialectPostgres {
			if _, err := tx.ExecContext(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
				return err
			}
			return tx.SelectContext(ctx, &plan, "EXPLAIN "+db.rebind(query), args...)
		}
		rows, err := tx.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				return err
			}
			plan = append(plan, detail)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// TestRangeListsSeekAnIndex checks SQLite's plans of the Orders page's lists
// over a range of days and of their counts: a transition range (Daily
// totals' cancelled, finalized and reversed links) reads the read side's
// index on (figure, bucket) and each of its orders by row, never a walk
// of the store's orders, and a bound within a quarter hour the status
// history's index on that part, a cancellation's paid time from the index
// on (row, paid time); a status or currency filter with a created or paid
// range is counted from an index alone, of one store or of every store,
// never from the orders' rows; every store's
// page merges each store's first rows in its sort's index; a count without
// a filter reads the fetched orders' index (SQLite).
func TestRangeListsSeekAnIndex(t *testing.T) {
	day := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	collected := []ordersync.Status{ordersync.StatusPaid, ordersync.StatusFinalized}
	transitions := map[string]ordersync.OrderFilter{
		"cancelled on a day":                  {Account: ordersync.DefaultAccount, Currency: "USD", CancelledFrom: day, CancelledTo: day.AddDate(0, 0, 1)},
		"finalized on a day":                  {Account: ordersync.DefaultAccount, Currency: "USD", FinalizedFrom: day, FinalizedTo: day.AddDate(0, 0, 1)},
		"reversed since":                      {Account: ordersync.DefaultAccount, ReversedFrom: day},
		"reversed, all stores, largest first": {ReversedFrom: day, ReversedTo: day.AddDate(0, 0, 1), Sort: ordersync.SortTotalDesc},
		"reversed since an instant":           {Account: ordersync.DefaultAccount, ReversedFrom: day.Add(7*time.Minute + 3*time.Second)},
		"finalized before an instant":         {Account: ordersync.DefaultAccount, FinalizedFrom: day, FinalizedTo: day.Add(time.Hour + time.Second)},
	}
	statuses := map[string]ordersync.OrderFilter{
		"collected":                                  {Account: ordersync.DefaultAccount, Statuses: collected, CountUpTo: 10000},
		"cancelled, largest first":                   {Account: ordersync.DefaultAccount, Statuses: []ordersync.Status{ordersync.StatusCancelled}, Sort: ordersync.SortTotalDesc, CountUpTo: 10000},
		"collected, paid in a month":                 {Account: ordersync.DefaultAccount, Statuses: collected, PaidFrom: day.AddDate(0, -1, 0), PaidTo: day},
		"pending, created in a month":                {Account: ordersync.DefaultAccount, Statuses: []ordersync.Status{ordersync.StatusPending}, CreatedFrom: day.AddDate(0, -1, 0), CreatedTo: day},
		"collected, paid, by paid time":              {Account: ordersync.DefaultAccount, Statuses: collected, PaidFrom: day.AddDate(0, -1, 0), Sort: ordersync.SortPaidDesc, CountUpTo: 10000},
		"all stores, collected, paid in a month":     {Statuses: collected, PaidFrom: day.AddDate(0, -1, 0), PaidTo: day, CountUpTo: 10000},
		"all stores, a currency, paid in a month":    {Currency: "EUR", PaidFrom: day.AddDate(0, -1, 0), PaidTo: day, CountUpTo: 10000},
		"all stores, a currency, created in a month": {Currency: "EUR", CreatedFrom: day.AddDate(0, -1, 0), CreatedTo: day, CountUpTo: 10000},
	}
	// Every store's pages, with the stores planSearch finds.
	stores := []string{ordersync.DefaultAccount, "eu"}
	allStores := map[string]ordersync.OrderFilter{
		"all stores, collected":                {Statuses: collected},
		"all stores, collected, largest first": {Statuses: collected, Sort: ordersync.SortTotalDesc},
		"all stores, paid, by paid time":       {Statuses: []ordersync.Status{ordersync.StatusPaid}, Sort: ordersync.SortPaidDesc},
	}
	// Counts without a filter, of one store and of all.
	unfiltered := map[string]ordersync.OrderFilter{
		"no filter":                {Account: ordersync.DefaultAccount, CountUpTo: 10000},
		"no filter, all stores":    {CountUpTo: 10000},
		"no filter, largest first": {Account: ordersync.DefaultAccount, Sort: ordersync.SortTotalDesc, CountUpTo: 10000},
	}
	queries := func(t *testing.T, db *DB, f ordersync.OrderFilter) (page, count string, pageArgs, countArgs []any) {
		sort, err := checkFilter(f)
		if err != nil {
			t.Fatal(err)
		}
		col := sortColumns[sort.Key()]
		names := searchPlan{}
		if f.Account == "" {
			names.stores = stores
		}
		page, _, pageArgs = db.partQueries(everyOrderColumn, f, names, col, col, "DESC", 101,
			func(string) ([]string, []any) { return []string{col + " IS NOT NULL"}, nil })
		_, count, countArgs = db.partQueries(everyOrderColumn, f, names, col, "", "ASC", 0, func(string) ([]string, []any) { return nil, nil })
		return page, count, append(pageArgs, 101, 0), countArgs
	}
	// SQLite only: PostgreSQL plans by its statistics, which a test's few
	// orders do not make those of a store's million.
	t.Run(DialectSQLite, func(t *testing.T) {
		db := openDB(t, sqliteURL(t))
		for name, f := range transitions {
			page, count, pa, ca := queries(t, db, f)
			for what, q := range map[string]struct {
				sql  string
				args []any
			}{"page": {page, pa}, "count": {count, ca}} {
				plan := explain(t, db, q.sql, q.args...)
				p := strings.Join(plan, "\n")
				// The figures' index is sought on the range's quarter
				// hours, and the orders are read by row: no walk of an
				// orders index.
				ok := strings.Contains(p, "report_order_figures_range (figure=? AND bucket>") &&
					!slices.ContainsFunc(plan, func(l string) bool {
						return strings.HasPrefix(l, "SCAN orders") || (strings.HasPrefix(l, "SEARCH orders") && !strings.Contains(l, "PRIMARY KEY") &&
							!strings.Contains(l, " AND id=?") && !strings.Contains(l, "INDEX orders_row_times (id=?"))
					})
				if !ok {
					t.Errorf("%s, its %s: plan\n%s\nwant a seek of report_order_figures_range and each order by its row", name, what, p)
				}
				// With no condition on a column the index on (row, paid
				// time, created time, store) lacks, each order is sought
				// there, not in the table.
				if f.Currency == "" && f.Sort != ordersync.SortTotalDesc && !strings.Contains(p, "SEARCH orders USING COVERING INDEX orders_row_times (id=?") {
					t.Errorf("%s, its %s: plan\n%s\nwant each order sought in orders_row_times", name, what, p)
				}
				// A bound within a quarter hour: the history's index is
				// sought on that part of it, and a cancellation's order's
				// paid time comes from the index on (row, paid time), not
				// the order's row.
				if !strings.HasSuffix(name, "an instant") {
					continue
				}
				if !strings.Contains(p, "status_history_to_status_at (to_status=? AND at>") {
					t.Errorf("%s, its %s: plan\n%s\nwant a seek of status_history_to_status_at", name, what, p)
				}
				if f.CancelledFrom.IsZero() && f.ReversedFrom.IsZero() {
					continue
				}
				if !strings.Contains(p, "SEARCH o USING COVERING INDEX orders_row_times (id=?") {
					t.Errorf("%s, its %s: plan\n%s\nwant each cancellation's paid time from orders_row_times", name, what, p)
				}
			}
		}
		for name, f := range statuses {
			_, count, _, ca := queries(t, db, f)
			plan := explain(t, db, count, ca...)
			if slices.ContainsFunc(plan, func(l string) bool {
				return strings.HasPrefix(l, "SCAN orders") || (strings.HasPrefix(l, "SEARCH orders") && !strings.Contains(l, "COVERING INDEX"))
			}) {
				t.Errorf("%s, its count: plan\n%s\nwant an index alone", name, strings.Join(plan, "\n"))
			}
		}
		for name, f := range allStores {
			page, _, pa, _ := queries(t, db, f)
			plan := explain(t, db, page, pa...)
			// Each store's index is sought in the page's order, read no
			// further than the page, and only the stores' pages are
			// sorted: never every order the filter selects.
			seeks := 0
			for _, l := range plan {
				if strings.HasPrefix(l, "SEARCH orders USING COVERING INDEX orders_account_") && strings.Contains(l, "(account=?") {
					seeks++
				}
			}
			if seeks != len(stores) || slices.ContainsFunc(plan, func(l string) bool {
				return strings.HasPrefix(l, "SCAN orders") || strings.Contains(l, "orders_status_created_at")
			}) {
				t.Errorf("%s, its page: plan\n%s\nwant a seek of each store's sort index", name, strings.Join(plan, "\n"))
			}
		}
		for name, f := range unfiltered {
			_, count, _, ca := queries(t, db, f)
			plan := explain(t, db, count, ca...)
			// The fetched orders' index answers without the orders' rows
			// (SQLite names it without COVERING, as it does a partial
			// index whose condition is the query's, yet reads no row).
			if !slices.ContainsFunc(plan, func(l string) bool { return strings.Contains(l, "INDEX orders_account_fetched") }) {
				t.Errorf("%s, its count: plan\n%s\nwant the fetched orders' index", name, strings.Join(plan, "\n"))
			}
		}
	})
}

// TestEveryStoreCountSeeksEachStore checks PostgreSQL's bounded counts of
// the Orders page over every store: they name the stores, so that each is
// sought in an index that begins with the account (PostgreSQL 15 cannot
// skip-scan one) rather than another index walked testing each order's
// row. The plan is checked where a test's empty tables decide it as a
// store's million orders do: a status alone.
func TestEveryStoreCountSeeksEachStore(t *testing.T) {
	t.Parallel()
	db := openDB(t, postgresURL(t))
	day := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	stores := []string{ordersync.DefaultAccount, "eu"}
	for name, c := range map[string]struct {
		f    ordersync.OrderFilter
		plan bool
	}{
		"cancelled":               {ordersync.OrderFilter{Statuses: []ordersync.Status{ordersync.StatusCancelled}, CountUpTo: 10000}, true},
		"pending, largest first":  {ordersync.OrderFilter{Statuses: []ordersync.Status{ordersync.StatusPending}, Sort: ordersync.SortTotalDesc, CountUpTo: 10000}, true},
		"collected, paid a month": {ordersync.OrderFilter{Statuses: ordersync.Collected, PaidFrom: day.AddDate(0, -1, 0), PaidTo: day, CountUpTo: 10000}, false},
	} {
		sort, err := checkFilter(c.f)
		if err != nil {
			t.Fatal(err)
		}
		_, count, args := db.partQueries(everyOrderColumn, c.f, searchPlan{stores: stores}, sortColumns[sort.Key()], "", "ASC", 0,
			func(string) ([]string, []any) { return nil, nil })
		if !strings.Contains(count, "account IN (?, ?)") || !slices.Contains(args, any(stores[0])) || !slices.Contains(args, any(stores[1])) {
			t.Errorf("%s, its count: %s %v\nwant the stores named", name, count, args)
			continue
		}
		if plan := strings.Join(explain(t, db, count, args...), "\n"); c.plan && !strings.Contains(plan, "Index Cond: ((account = ANY") {
			t.Errorf("%s, its count: plan\n%s\nwant a seek of each store", name, plan)
		}
	}
}
