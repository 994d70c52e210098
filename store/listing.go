package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/ordersync/ordersync"
)

// sortColumns are the columns of the sort keys.
var sortColumns = map[string]string{"created": "created_at", "paid": "paid_at", "total": "total_key"}

// ListOrders returns a page of fetched orders in the filter's sort, with
// line items and metadata but without the raw document. Orders with the
// sort's value come first, by (value, row), then those without one (no paid
// time yet), by row: each part is a range of an index, and a cursor names
// the part it stopped in. Limit defaults to 100 and is capped at 1000.
func (db *DB) ListOrders(ctx context.Context, filter ordersync.OrderFilter) (ordersync.OrderPage, error) {
	sort, err := checkFilter(filter)
	if err != nil {
		return ordersync.OrderPage{}, fmt.Errorf("list orders: %w", err)
	}
	out := ordersync.OrderPage{Limit: clampLimit(filter.Limit, defaultListLimit, maxListLimit), Offset: max(filter.Offset, 0)}
	want := out.Limit + 1 // one more than the page tells whether another follows
	err = db.inReadTx(ctx, "list orders", func(tx *sqlx.Tx) error {
		if filter.FromIndexer() {
			// The name words and the figures' ranges come from the
			// indexer: say how current they are, in this snapshot.
			var s IndexStatus
			if err := db.indexStatus(ctx, tx, &s); err != nil {
				return err
			}
			out.AsOf, out.Behind = s.AsOf.Truncate(time.Second), s.Behind()
		}
		names, err := db.planSearch(ctx, tx, filter)
		if err != nil {
			return err
		}
		if filter.Count {
			_, count, args := db.partQueries(everyOrderColumn, filter, names, sortColumns[sort.Key()], "", "ASC", 0, func(string) ([]string, []any) { return nil, nil })
			var n int
			if err := tx.GetContext(ctx, &n, db.rebind(count), args...); err != nil {
				return err
			}
			out.Total = &n
		}
		rows, err := db.selectOrders(ctx, tx, everyOrderColumn, filter, names, sort, want, out.Offset)
		if err != nil {
			return err
		}
		if len(rows) == want {
			rows = rows[:out.Limit]
			out.Next = rows[len(rows)-1].cursor(sort)
		}
		out.Orders = make([]*ordersync.MirroredOrder, len(rows))
		ids := make([]int64, len(rows))
		for i := range rows {
			out.Orders[i], ids[i] = rows[i].mirrored(), rows[i].ID
		}
		if filter.Summary {
			return nil
		}
		return db.loadDetails(ctx, tx, ids, out.Orders)
	})
	if err != nil {
		return ordersync.OrderPage{}, err
	}
	return out, nil
}

// checkFilter refuses what no listing or export can follow, and returns the
// filter's sort with its default filled in.
func checkFilter(filter ordersync.OrderFilter) (ordersync.OrderSort, error) {
	sort := filter.Sort
	if sort == "" {
		sort = ordersync.SortCreatedDesc
	}
	if _, err := ordersync.ParseOrderSort(string(sort)); err != nil {
		return "", err
	}
	if !filter.Since.IsZero() && !filter.CreatedFrom.IsZero() {
		return "", fmt.Errorf("Since and CreatedFrom cannot both be given")
	}
	if filter.After != nil && filter.After.Sort != sort {
		return "", fmt.Errorf("the cursor continues sort %s, not %s", filter.After.Sort, sort)
	}
	return sort, nil
}

// selectOrders reads up to want rows of the orders filter selects, in
// sort, after filter.After and offset more: the one query of a listing's
// page and of an export's batch, so that both select and order alike.
// names is planSearch's answer in the same transaction; set, the
// columns it reads.
func (db *DB) selectOrders(ctx context.Context, tx *sqlx.Tx, set orderColumnSet, filter ordersync.OrderFilter, names searchPlan, sort ordersync.OrderSort,
	want, offset int) ([]orderRow, error) {
	col, dir, cmp := sortColumns[sort.Key()], "ASC", ">"
	if sort.Desc() {
		dir, cmp = "DESC", "<"
	}
	after := filter.After
	var key any
	keyed := false
	if after != nil {
		key, keyed = cursorKey(after)
	}
	// valued is the part with the sort's value, after the cursor when it
	// stopped there; unvalued, the part without, after the cursor when it
	// stopped there (then the valued part is done).
	skipValued := after != nil && !keyed
	valued := func(id string) ([]string, []any) {
		if keyed {
			return []string{col + " IS NOT NULL", "(" + col + ", " + id + ") " + cmp + " (?, ?)"}, []any{key, after.Row}
		}
		return []string{col + " IS NOT NULL"}, nil
	}
	unvalued := func(id string) ([]string, []any) {
		if skipValued {
			return []string{col + " IS NULL", id + " " + cmp + " ?"}, []any{after.Row}
		}
		return []string{col + " IS NULL"}, nil
	}
	var rows []orderRow
	if !skipValued {
		q, _, args := db.partQueries(set, filter, names, col, col, dir, want+offset, valued)
		var err error
		if rows, err = queryOrderRows(ctx, tx, set, db.rebind(q), append(args, want, offset)...); err != nil {
			return nil, err
		}
		if len(rows) < want && offset > 0 {
			// The offset reaches past the valued part: what is left of it
			// applies to the unvalued part. The count is asked for with no
			// rows, since the page's query of every store merges each
			// store's rows and its arguments are not the count's.
			_, count, countArgs := db.partQueries(set, filter, names, col, col, dir, 0, valued)
			var n int
			if err := tx.GetContext(ctx, &n, db.rebind(count), countArgs...); err != nil {
				return nil, err
			}
			offset = max(offset-n, 0)
		} else {
			offset = 0
		}
	}
	if len(rows) < want {
		q, _, args := db.partQueries(set, filter, names, col, "", dir, want-len(rows)+offset, unvalued)
		more, err := queryOrderRows(ctx, tx, set, db.rebind(q), append(args, want-len(rows), offset)...)
		if err != nil {
			return nil, err
		}
		rows = append(rows, more...)
	}
	return rows, nil
}

// orderPart is a part of a listing (see selectOrders): its conditions on
// the sort's column and the row id, named id, and their arguments.
type orderPart func(id string) ([]string, []any)

// partQueries are the query that reads the orders of one part of what f
// selects, ordered by orderBy (the sort's column, or "" for the row alone)
// then the row in dir, ending with LIMIT and OFFSET placeholders that
// together ask for at most rows rows; the one that counts them; and their
// arguments but the limit and offset. col is the sort's column.
//
// Both read the page's row ids and sort values first, and only then the
// page's orders: from an index where one holds every column the filter
// reads, and for a search from the found identifiers and the words' rows
// (which repeat the order's filtered and sorted columns). A common name or
// a rare total range selects tens of thousands of orders, and reading each
// order's row to sort them would cost far more than the page.
func (db *DB) partQueries(set orderColumnSet, f ordersync.OrderFilter, names searchPlan, col, orderBy, dir string, rows int, part orderPart) (string, string, []any) {
	where, whereArgs := db.filterConditions(f, col)
	q := strings.TrimSpace(f.Q)
	ranges := db.countedRanges(f)
	var (
		from     = "orders"
		fromArgs []any
	)
	if q == "" && len(ranges) > 0 {
		// A transition range selects a day's or a month's orders out of
		// the store's: they are read from the range's index
		// (figureRange), then each order by its row, where walking the
		// store's orders in the sort's index to test each against the
		// range reads every one of them.
		from = "(" + ranges[0].sql + ") AS counted" + db.crossJoin() + "orders" + db.rowTimes(f, col) + " ON orders.id = counted.order_row"
		fromArgs, ranges = ranges[0].args, ranges[1:]
	}
	if counted := countedConditions(ranges); counted != nil {
		// On the order's row id, which orders and the words' rows name
		// differently: part's conditions are where such conditions go.
		inner := part
		part = func(id string) ([]string, []any) {
			pc, pa := inner(id)
			cc, ca := counted(id)
			return slices.Concat(cc, pc), slices.Concat(ca, pa)
		}
	}
	order := "found_id " + dir
	if orderBy != "" {
		order = "k " + dir + ", " + order
	}
	var (
		found, counted string
		args           []any
	)
	if q == "" {
		// Only fetched orders have a created time, a paid time or a total
		// (the upsert of a document writes them), so the part with the
		// sort's value needs no test of raw_document, which would keep
		// SQLite from finding the page's rows in an index alone.
		fetched := []string{}
		if orderBy == "" {
			fetched = []string{"raw_document IS NOT NULL"}
		}
		pc, pa := part("id")
		merged := f.Account == "" && len(names.stores) > 0 && orderBy != "" && len(fromArgs) == 0 && rows > 0
		scope, scopeArgs := db.storesScope(f, names, len(fromArgs) > 0, merged)
		cond := ` FROM ` + from + ` WHERE `
		found = `SELECT id AS found_id, ` + col + ` AS k` + cond + strings.Join(slices.Concat(fetched, scope, where, pc), " AND ")
		args = slices.Concat(fromArgs, scopeArgs, whereArgs, pa)
		if merged {
			// Every store's page: each store's first rows in its index on
			// (account, sort's column, id), merged. One index walked for
			// all stores would be one on the status or the sort's column
			// alone, whose order is not the page's, and the page would
			// sort every order the filter selects (every collected one).
			found, args = "", nil
			for i, s := range names.stores {
				if i > 0 {
					found += " UNION ALL "
				}
				store := `SELECT id AS found_id, ` + col + ` AS k FROM orders WHERE ` +
					strings.Join(slices.Concat([]string{"account = ?"}, where, pc), " AND ")
				storeArgs := slices.Concat([]any{s}, whereArgs, pa)
				if db.walks(f, orderBy, rows) {
					store, storeArgs = db.walkFirst(f, s, pc, pa, order, rows, store, storeArgs)
				} else {
					store += ` ORDER BY ` + order + ` LIMIT ` + strconv.Itoa(rows)
				}
				found += `SELECT * FROM (` + store + `) AS store` + strconv.Itoa(i)
				args = append(args, storeArgs...)
			}
		} else if db.walks(f, orderBy, rows) && f.Account != "" {
			found, args = db.walkFirst(f, f.Account, pc, pa, order, rows, found, args)
		}
		// The count reads no sort value, and no document when the filter
		// selects fetched orders only: either would cost a read of each
		// order's row where the filter's index alone answers it.
		if onlyFetched(f) {
			fetched = nil
		}
		counted = `SELECT id AS found_id` + cond + strings.Join(slices.Concat(fetched, scope, where, pc), " AND ")
		if len(fetched)+len(scope)+len(where)+len(pc) == 0 {
			counted = strings.TrimSuffix(counted, " WHERE ")
		}
	} else {
		found, args = db.searchFound(f.Account, q, names, col, orderBy != "", where, whereArgs, part, order, rows)
		counted, _ = db.searchFound(f.Account, q, names, col, orderBy != "", where, whereArgs, part, order, 0)
	}
	if f.CountUpTo > 0 {
		// Counting stops one past the bound, which says "more than it".
		counted = `SELECT found_id FROM (` + counted + `) AS bounded LIMIT ` + strconv.Itoa(f.CountUpTo+1)
	}
	page := `(SELECT found_id, k FROM (` + found + `) AS found ORDER BY ` + order + ` LIMIT ? OFFSET ?)`
	if db.dialect == DialectSQLite {
		// The page's rows are read from the table in row order, then put
		// in the page's: most sorts run against the rows' order (newest
		// first), and the operating system reads ahead only forwards, so
		// on a file not yet in its cache each row would otherwise cost a
		// read of its own (LIMIT -1 keeps SQLite from dropping the order).
		page = `(SELECT found_id, k FROM ` + page + ` AS sorted ORDER BY found_id LIMIT -1)`
	}
	return `SELECT ` + set.list + ` FROM ` + page + ` AS page` +
			db.crossJoin() + `orders ON orders.id = page.found_id ORDER BY page.` + strings.ReplaceAll(order, ", ", ", page."),
		`SELECT COUNT(*) FROM (` + counted + `) AS found`, args
}

// storesScope is the condition that an order belongs to one of the
// mirror's stores, for a listing of every store (none otherwise;
// transition says the range of a status change leads). It selects nothing
// less, but lets the database seek each store's part of an index that
// begins with the account. On PostgreSQL, which cannot skip-scan such an
// index, it is added to every count and part that is not merged per store
// (without it, the console's bounded count read 10,001 orders' rows). On
// SQLite it is added with a created or paid range only, where each
// store's index on (account, time, …) holds the status: without it
// SQLite walks the index on the status alone and reads each order's row
// for its paid time (2 s to count the collected orders paid in a month of
// two stores of 100,000 orders, 3 ms with it); with no range the index on
// the status is the better one.
func (db *DB) storesScope(f ordersync.OrderFilter, names searchPlan, transition, merged bool) ([]string, []any) {
	if f.Account != "" || len(names.stores) == 0 || transition {
		return nil, nil
	}
	switch db.dialect {
	case DialectPostgres:
		if merged {
			return nil, nil
		}
	case DialectSQLite:
		ranged := !f.PaidFrom.IsZero() || !f.PaidTo.IsZero() || !f.CreatedFrom.IsZero() || !f.CreatedTo.IsZero() || !f.Since.IsZero()
		if !ranged {
			return nil, nil
		}
	}
	c, a := storeCondition("account", "", names.stores)
	return []string{strings.TrimPrefix(c, " AND ")}, a
}

// onlyFetched reports whether f selects fetched orders only: a
// placeholder (RecordOrderRef) has no status, created or paid time, total,
// currency or status history, so any condition on those excludes it.
func onlyFetched(f ordersync.OrderFilter) bool {
	for _, t := range []time.Time{f.Since, f.CreatedFrom, f.CreatedTo, f.PaidFrom, f.PaidTo, f.CancelledFrom, f.CancelledTo,
		f.FinalizedFrom, f.FinalizedTo, f.ReversedFrom, f.ReversedTo} {
		if !t.IsZero() {
			return true
		}
	}
	return len(f.Statuses) > 0 || f.Currency != "" || f.MinTotal != nil || f.MaxTotal != nil
}

// noIndex writes column so that SQLite cannot answer a condition on it from
// an index (a unary +); PostgreSQL, which plans by statistics, gets the
// column as it is.
func (db *DB) noIndex(column string) string {
	if db.dialect == DialectSQLite {
		return "+" + column
	}
	return column
}

// crossJoin joins the table on its right to the one on its left, read
// first: SQLite, which keeps no statistics here, could otherwise start from
// orders, and a CROSS JOIN is how it is told which table to start from.
func (db *DB) crossJoin() string {
	if db.dialect == DialectSQLite {
		return " CROSS JOIN "
	}
	return " JOIN "
}

// filterConditions are the conditions of what f selects, the search,
// cursor and offset aside, on columns that orders and order_name_tokens
// both have, and their arguments in the order of their placeholders. col
// is the sort's column.
func (db *DB) filterConditions(f ordersync.OrderFilter, col string) ([]string, []any) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, a ...any) {
		where, args = append(where, cond), append(args, a...)
	}
	if f.Account != "" {
		add("account = ?", f.Account)
	}
	if len(f.Statuses) > 0 {
		st := make([]any, len(f.Statuses))
		for i, s := range f.Statuses {
			st[i] = string(s)
		}
		add("status IN ("+placeholders(len(st))+")", st...)
	}
	for _, r := range []struct {
		col      string
		from, to time.Time
	}{{"created_at", f.CreatedFrom, f.CreatedTo}, {"created_at", f.Since, time.Time{}}, {"paid_at", f.PaidFrom, f.PaidTo}} {
		if !r.from.IsZero() {
			add(r.col+" >= ?", dbTime(r.from))
		}
		if !r.to.IsZero() {
			add(r.col+" < ?", dbTime(r.to))
		}
	}
	if f.Currency != "" {
		add("store_currency_code = ?", f.Currency)
	}
	total := "total_key"
	if db.dialect == DialectSQLite && f.Currency != "" && col != "total_key" {
		// The currency's index walked in the sort's order serves a
		// currency with a total range: SQLite, which keeps no statistics
		// here, would rather read the whole range (a fifth of the orders
		// for 100 to 500) and sort it.
		total = db.noIndex("total_key")
	}
	if f.MinTotal != nil {
		add(total+" >= ?", totalKey(*f.MinTotal))
	}
	if f.MaxTotal != nil {
		add(total+" <= ?", totalKey(*f.MaxTotal))
	}
	return where, args
}

// cursorKey is the sort value a cursor stopped at, as its column holds it,
// and false when it stopped among the orders without one.
func cursorKey(c *ordersync.OrderCursor) (any, bool) {
	switch {
	case c.Total != nil:
		return totalKey(*c.Total), true
	case c.Time != nil:
		return dbTime(*c.Time), true
	}
	return nil, false
}

// cursor is where a listing in sort that ends with r continues.
func (r *orderRow) cursor(sort ordersync.OrderSort) *ordersync.OrderCursor {
	c := &ordersync.OrderCursor{Sort: sort, Row: r.ID}
	switch sort.Key() {
	case "created":
		if r.CreatedAt != nil {
			t := r.CreatedAt.UTC()
			c.Time = &t
		}
	case "paid":
		if r.PaidAt != nil {
			t := r.PaidAt.UTC()
			c.Time = &t
		}
	case "total":
		if r.TotalKey != nil {
			total := r.Total
			c.Total = &total
		}
	}
	return c
}
