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

// The widths of totalKey: every amount ordersync.ParseAmount accepts fits.
const (
	totalKeyIntegerDigits  = ordersync.MaxAmountIntegerDigits
	totalKeyFractionDigits = ordersync.MaxAmountFractionDigits
)

// totalKey is an amount as fixed-width text whose byte order is the
// numbers' order, so that an index on TEXT filters and sorts totals exactly
// in both dialects: "1" then the integer and fraction digits zero-padded for
// zero and above, "0" then the nines' complement of those digits below
// zero. 17.99 and 17.990 have the same key.
func totalKey(a ordersync.Amount) string {
	s := a.String()
	neg := a.Sign() < 0
	s = strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	b.Grow(1 + totalKeyIntegerDigits + totalKeyFractionDigits)
	digits := strings.Repeat("0", totalKeyIntegerDigits-len(whole)) + whole + frac + strings.Repeat("0", totalKeyFractionDigits-len(frac))
	if !neg {
		b.WriteByte('1')
		b.WriteString(digits)
		return b.String()
	}
	b.WriteByte('0')
	for i := 0; i < len(digits); i++ {
		b.WriteByte('9' - digits[i] + '0')
	}
	return b.String()
}

// deleteTokens deletes orders' words before the indexer writes them again.
var deleteTokens = rowsSQL{prefix: `DELETE FROM order_name_tokens WHERE order_row IN (`, cols: 1, suffix: `)`}

// tokenKeyColumns are the columns of orders that order_name_tokens repeats,
// by the same names, so that the listing's conditions read alike on both.
var tokenKeyColumns = []string{"status", "store_currency_code", "created_at", "paid_at", "total_key"}

// The statements of backfillSearch: VALUES columns are column1, column2 in
// both dialects, and PostgreSQL reads their parameters as text, so the row
// id goes as its decimal text. The words' other columns are filled by
// backfillNameTokenKeys, which runs after it.
var (
	backfillTotalKeys = rowsSQL{prefix: `UPDATE orders SET total_key = v.column2 FROM (VALUES `, cols: 2,
		suffix: `) AS v WHERE orders.id = CAST(v.column1 AS BIGINT)`}
	backfillTokens = rowsSQL{prefix: `INSERT INTO order_name_tokens (account, token, order_row) VALUES `, cols: 3, suffix: ` ON CONFLICT DO NOTHING`}
)

// backfillSearch fills total_key and the name tokens of orders mirrored
// before migration 00009, when its mark says they are pending, a thousand
// orders per transaction, then clears the mark. It runs under the
// migration lock.
func (db *DB) backfillSearch(ctx context.Context) error {
	type row struct {
		ID        int64             `db:"id"`
		Account   string            `db:"account"`
		Total     *ordersync.Amount `db:"total"`
		BuyerName string            `db:"buyer_name"`
	}
	return db.backfill(ctx, "search columns", "search_backfill", func(tx *sqlx.Tx, after int64, limit int) (int64, int, error) {
		var rows []row
		if err := tx.SelectContext(ctx, &rows, db.rebind(`SELECT id, account, total, buyer_name FROM orders
WHERE id > ? AND raw_document IS NOT NULL ORDER BY id LIMIT ?`), after, limit); err != nil || len(rows) == 0 {
			return after, 0, err
		}
		var keys, tokens [][]any
		for _, r := range rows {
			if r.Total != nil {
				keys = append(keys, []any{strconv.FormatInt(r.ID, 10), totalKey(*r.Total)})
			}
			for _, t := range ordersync.NameTokens(r.BuyerName) {
				tokens = append(tokens, []any{r.Account, t, r.ID})
			}
		}
		if err := db.execRows(ctx, tx, backfillTotalKeys, keys); err != nil {
			return after, 0, err
		}
		return rows[len(rows)-1].ID, len(rows), db.execRows(ctx, tx, backfillTokens, tokens)
	})
}

// backfillNameTokenKeys copies tokenKeyColumns from the orders to their
// words written before migration 00013, when its mark says they are
// pending, a thousand orders per transaction, then clears the mark. It
// runs under the migration lock, after backfillSearch.
func (db *DB) backfillNameTokenKeys(ctx context.Context) error {
	set := make([]string, len(tokenKeyColumns))
	for i, c := range tokenKeyColumns {
		set[i] = c + " = o." + c
	}
	update := db.rebind(`UPDATE order_name_tokens SET ` + strings.Join(set, ", ") + ` FROM orders o
WHERE o.id = order_name_tokens.order_row AND order_name_tokens.order_row > ? AND order_name_tokens.order_row <= ?`)
	return db.backfill(ctx, "name words' sort keys", "name_token_backfill", func(tx *sqlx.Tx, after int64, limit int) (int64, int, error) {
		var ids []int64
		if err := tx.SelectContext(ctx, &ids, db.rebind(`SELECT id FROM orders
WHERE id > ? AND raw_document IS NOT NULL ORDER BY id LIMIT ?`), after, limit); err != nil || len(ids) == 0 {
			return after, 0, err
		}
		last := ids[len(ids)-1]
		_, err := tx.ExecContext(ctx, update, after, last)
		return last, len(ids), err
	})
}

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
		if filter.Q != "" {
			// The name words come from the indexer: say how current they
			// are, in this snapshot.
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
		q, count, args := db.partQueries(set, filter, names, col, col, dir, want+offset, valued)
		var err error
		if rows, err = queryOrderRows(ctx, tx, set, db.rebind(q), append(args, want, offset)...); err != nil {
			return nil, err
		}
		if len(rows) < want && offset > 0 {
			// The offset reaches past the valued part: what is left of it
			// applies to the unvalued part.
			var n int
			if err := tx.GetContext(ctx, &n, db.rebind(count), args...); err != nil {
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
		// the store's: they are read from the status history's index on
		// (status, time), then each order by its row, where walking the
		// store's orders in the sort's index to test each against the
		// range reads every one of them.
		from = "(" + ranges[0].sql + ") AS counted" + db.crossJoin() + "orders ON orders.id = counted.order_row"
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
				found += `SELECT * FROM (SELECT id AS found_id, ` + col + ` AS k FROM orders WHERE ` +
					strings.Join(slices.Concat([]string{"account = ?"}, where, pc), " AND ") +
					` ORDER BY ` + order + ` LIMIT ` + strconv.Itoa(rows) + `) AS store` + strconv.Itoa(i)
				args = append(slices.Concat(args, []any{s}, whereArgs), pa...)
			}
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

// The orders the daily totals' transition figures count in [?, ?), each
// once, as a subquery of their row ids (order_row): the rules of
// DailyTotals' reportFinalizedSQL and reportCancelledSQL, which count an
// order once per figure, at its first finalization, its first
// cancellation when never paid, and its first cancellation after the
// payment when paid.
// The cancelled and reversed ones join the order for its paid time where
// %s stands after "orders o" (countedSQL).
const (
	countedFinalizedSQL = `SELECT h.order_row FROM status_history h WHERE h.to_status = 'FINALIZED' AND h.at >= ? AND h.at < ?
  AND NOT EXISTS (SELECT 1 FROM status_history e WHERE e.order_row = h.order_row AND e.to_status = 'FINALIZED' AND e.id < h.id)`
	countedCancelledSQL = `SELECT h.order_row FROM status_history h JOIN orders o%s ON o.id = h.order_row
WHERE o.paid_at IS NULL AND h.to_status = 'CANCELLED' AND h.at >= ? AND h.at < ?
  AND NOT EXISTS (SELECT 1 FROM status_history e WHERE e.order_row = h.order_row AND e.to_status = 'CANCELLED' AND e.id < h.id)`
	countedReversedSQL = `SELECT h.order_row FROM status_history h JOIN orders o%s ON o.id = h.order_row
WHERE o.paid_at IS NOT NULL AND h.to_status = 'CANCELLED' AND h.at >= o.paid_at AND h.at >= ? AND h.at < ?
  AND NOT EXISTS (SELECT 1 FROM status_history e WHERE e.order_row = h.order_row AND e.to_status = 'CANCELLED' AND e.id < h.id
                  AND e.at >= o.paid_at)`
)

// countedSQL is a transition range's subquery in db's dialect. A month's
// cancellations (28,000 on two stores of 1,000,000 orders) each need
// their order's paid time: SQLite would read it from the order's row,
// which it seeks by its integer key whatever index holds the column, a
// page of the table for each; it is told to read the index on (row, paid
// time) (migration 34), where the month's orders take a few hundred pages.
func (db *DB) countedSQL(sql string) string {
	if !strings.Contains(sql, "%s") {
		return sql
	}
	if db.dialect == DialectSQLite {
		return fmt.Sprintf(sql, " INDEXED BY orders_row_paid")
	}
	return fmt.Sprintf(sql, "")
}

// countedRange is one of a filter's transition ranges: the subquery of
// the row ids of its orders and its two arguments.
type countedRange struct {
	sql  string
	args []any
}

// countedRanges are f's transition ranges, none when it has none.
func (db *DB) countedRanges(f ordersync.OrderFilter) []countedRange {
	var out []countedRange
	for _, r := range []struct {
		sql      string
		from, to time.Time
	}{{countedCancelledSQL, f.CancelledFrom, f.CancelledTo},
		{countedFinalizedSQL, f.FinalizedFrom, f.FinalizedTo}, {countedReversedSQL, f.ReversedFrom, f.ReversedTo}} {
		if r.from.IsZero() && r.to.IsZero() {
			continue
		}
		// An open bound is the widest a time column holds.
		from, to := r.from, r.to
		if from.IsZero() {
			from = time.Unix(0, 0)
		}
		if to.IsZero() {
			to = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		out = append(out, countedRange{db.countedSQL(r.sql), []any{dbTime(from), dbTime(to)}})
	}
	return out
}

// countedConditions are the conditions of ranges on the order's row id,
// or nil when there are none.
func countedConditions(ranges []countedRange) orderPart {
	if len(ranges) == 0 {
		return nil
	}
	return func(id string) ([]string, []any) {
		var (
			conds []string
			args  []any
		)
		for _, r := range ranges {
			conds = append(conds, id+" IN ("+r.sql+")")
			args = append(args, r.args...)
		}
		return conds, args
	}
}

// searchPlan is how a search matches phone numbers and buyer names,
// decided by planSearch in the page's read transaction.
type searchPlan struct {
	// phones are the phone keys the search looks for (planPhoneSearch).
	phones []string
	// wholeReference: the search's beginning of a reference is too common
	// (broadReferencePrefix), so it matches whole references only.
	wholeReference bool
	words          []string
	// none: no word of the buyer names of the account (or of any store)
	// begins with one of the search's words, so only the identifiers can
	// find an order.
	none bool
	// exact is the one word of the account's buyer names that begins with
	// the first word, "" when there are several (or the account is not
	// known). Then no order is found twice by its name (its words are
	// distinct), and the name's rows are added to the identifiers' without
	// the de-duplication that would cost a pass over every one of them.
	exact string
	// later holds, on PostgreSQL when exact is set, the one word of the
	// account's buyer names that begins with each later word of the
	// search, "" where there are several or none.
	later []string
	// stores are the accounts the mirror holds, when the listing covers
	// every store: the identifiers', words' and sorts' indexes begin with
	// the account, so each is sought once per store, where without one it
	// would be read whole (SQLite keeps no statistics for a skip-scan,
	// PostgreSQL 15 has none).
	stores []string
}

// storeCondition is the condition on a row's account column col that it
// belongs to account, or with account "" to one of stores (none when
// stores is empty too), with its arguments.
func storeCondition(col, account string, stores []string) (string, []any) {
	if account != "" {
		return " AND " + col + " = ?", []any{account}
	}
	if len(stores) == 0 {
		return "", nil
	}
	args := make([]any, len(stores))
	for i, s := range stores {
		args[i] = s
	}
	return " AND " + col + " IN (" + placeholders(len(stores)) + ")", args
}

// mirrorStores reads the accounts the mirror's orders belong to: one seek
// per account in an index that begins with it.
func (db *DB) mirrorStores(ctx context.Context, tx *sqlx.Tx) ([]string, error) {
	var stores []string
	err := tx.SelectContext(ctx, &stores, `WITH RECURSIVE a (account) AS (
    SELECT MIN(account) FROM orders
    UNION ALL
    SELECT (SELECT MIN(account) FROM orders WHERE account > a.account) FROM a WHERE a.account IS NOT NULL)
SELECT account FROM a WHERE account IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("read the mirror's stores: %w", err)
	}
	return stores, nil
}

// tokenMatch is the condition on a word's column that matches a prefix,
// and the pattern it takes for a word.
func (db *DB) tokenMatch(column string) (string, func(string) string) {
	if db.dialect == DialectPostgres {
		// The "C" collation makes LIKE 'prefix%' a range of the index.
		return column + " LIKE ?", func(w string) string { return w + "%" }
	}
	return column + " GLOB ?", func(w string) string { return w + "*" }
}

// planSearch looks up, in tx, the phone keys of the search, and the
// first two words of the account's buyer names that begin with the
// search's first word: two seeks in the words' index. Words hold letters
// and digits only, so a prefix needs no escaping in a pattern.
func (db *DB) planSearch(ctx context.Context, tx *sqlx.Tx, f ordersync.OrderFilter) (searchPlan, error) {
	q := strings.TrimSpace(f.Q)
	names := searchPlan{words: ordersync.NameTokens(q)}
	var err error
	if f.Account == "" {
		if names.stores, err = db.mirrorStores(ctx, tx); err != nil {
			return names, err
		}
	}
	if q == "" {
		return names, nil
	}
	if names.phones, err = db.planPhoneSearch(ctx, tx, f.Account, q); err != nil {
		return names, err
	}
	if names.wholeReference, err = db.broadReferencePrefix(ctx, tx, f.Account, names.stores, q); err != nil {
		return names, err
	}
	if len(names.words) == 0 {
		return names, nil
	}
	match, pattern := db.tokenMatch("token")
	next := func(account, word, cmp, from string) (string, error) {
		var token []string
		err := tx.SelectContext(ctx, &token, db.rebind(`SELECT token FROM order_name_tokens WHERE account = ? AND token `+cmp+` ? AND `+match+
			` ORDER BY token LIMIT 1`), account, from, pattern(word))
		if err != nil || len(token) == 0 {
			return "", err
		}
		return token[0], nil
	}
	if f.Account == "" {
		// Every store's search: a word that no buyer name of any store
		// has a word beginning with (an email's domain, a number) finds
		// no order by its name, where testing each order of the other
		// words for it would read every one of them.
		for _, w := range names.words {
			some := false
			for _, s := range names.stores {
				first, err := next(s, w, ">=", w)
				if err != nil {
					return names, err
				}
				if some = first != ""; some {
					break
				}
			}
			if !some {
				names.none = true
				break
			}
		}
		return names, nil
	}
	// only is the one word of the names that begins with word, "" when
	// there are none or several.
	only := func(word string) (string, bool, error) {
		first, err := next(f.Account, word, ">=", word)
		if err != nil || first == "" {
			return "", false, err
		}
		second, err := next(f.Account, word, ">", first)
		if err != nil || second != "" {
			return "", true, err
		}
		return first, true, nil
	}
	exact, some, err := only(names.words[0])
	if err != nil || !some {
		names.none = err == nil
		return names, err
	}
	var later []string
	for _, w := range names.words[1:] {
		// A later word that no name has a word beginning with finds no
		// order by its name either.
		word, some, err := only(w)
		if err != nil || !some {
			names.none = err == nil
			return names, err
		}
		later = append(later, word)
	}
	names.exact = exact
	if exact != "" && db.dialect == DialectPostgres {
		names.later = later
	}
	return names, nil
}

// searchFound is the row ids (found_id) and sort values (k, of col) of the
// orders of one part that a search for q finds, with the filter's
// conditions where: those an identifier finds (identifierMatches), and
// those whose buyer name has, for every word of q, a word that begins
// with it. A union of index lookups, the name's from order_name_tokens
// alone. With rows > 0, only the first rows of the name's in order (the
// listing's ORDER BY terms over found_id and k) are read. valued says the
// part is the one with the sort's value (col IS NOT NULL).
func (db *DB) searchFound(account, q string, names searchPlan, col string, valued bool, where []string, whereArgs []any, part orderPart,
	order string, rows int) (string, []any) {
	var (
		parts []string
		args  []any
	)
	pc, pa := part("id")
	acct, acctArgs := storeCondition("account", account, names.stores)
	match, pattern := db.tokenMatch("token")
	var (
		byName     []string
		byNameArgs []any
	)
	if names.exact != "" {
		// An order its identifier finds is left to the name's rows when its
		// name matches too, so that it is found once without the union's
		// de-duplication of the name's rows.
		for i, w := range names.words {
			m, a := match, pattern(w)
			if i == 0 {
				m, a = "token = ?", names.exact
			}
			byName = append(byName, `EXISTS (SELECT 1 FROM order_name_tokens x WHERE x.order_row = orders.id AND x.`+m+`)`)
			byNameArgs = append(byNameArgs, a)
		}
		byName = []string{"NOT (" + strings.Join(byName, " AND ") + ")"}
	}
	for _, m := range identifierMatches(q, names.phones, names.wholeReference) {
		// The identifier's index finds the order before the filter's
		// conditions are tested: given them in one WHERE, SQLite would
		// rather walk a range the filter names. "<> ''" lets SQLite use the
		// partial indexes, which it cannot know a parameter satisfies.
		conds := slices.Concat([]string{"raw_document IS NOT NULL"}, where, pc, byName)
		parts = append(parts, `SELECT id AS found_id, `+col+` AS k FROM (SELECT id AS ident_id FROM orders WHERE `+m.cond+` AND `+m.column+` <> ''`+acct+
			`) AS ident`+db.crossJoin()+`orders ON orders.id = ident.ident_id WHERE `+strings.Join(conds, " AND "))
		args = slices.Concat(args, m.args, acctArgs, whereArgs, pa, byNameArgs)
	}
	found := strings.Join(parts, " UNION ")
	if len(names.words) == 0 || names.none {
		return found, args
	}
	// The words' rows hold only fetched orders, and the filter's columns by
	// the same names as orders: the conditions read alike.
	conds := []string{"t0." + match}
	args = append(args, pattern(names.words[0]))
	if names.exact != "" {
		conds[0], args[len(args)-1] = "t0.token = ?", names.exact
	}
	if account == "" {
		if c, a := storeCondition("t0.account", "", names.stores); c != "" {
			conds = append([]string{strings.TrimPrefix(c, " AND ")}, conds...)
			args = slices.Concat(args[:len(args)-1], a, args[len(args)-1:])
		}
	}
	for i, w := range names.words[1:] {
		if valued && col == "created_at" && account != "" && i < len(names.later) && names.later[i] != "" {
			// A later word that is one word of the names, in the created
			// sort: its rows in the words' created index are in the
			// page's order too, so PostgreSQL merges the two walks on
			// (created time, row) and stops with the page, where a set of
			// the word's orders would read every one of its rows (15,000
			// for a common surname). The words' rows repeat their order's
			// created time, and the valued part has one.
			t := fmt.Sprintf("t%d", i+1)
			conds = append(conds, `EXISTS (SELECT 1 FROM order_name_tokens `+t+` WHERE `+t+`.account = t0.account AND `+t+`.token = ? AND `+
				t+`.created_at = t0.created_at AND `+t+`.order_row = t0.order_row)`)
			args = append(args, names.later[i])
			continue
		}
		if account != "" {
			// The other words' orders, each read once from the index and
			// kept in a set (SQLite) or hashed (PostgreSQL), rather than a
			// lookup of each word for every row of the first. The unary +
			// keeps SQLite from reading the set's orders one by one in the
			// first word's index instead.
			conds = append(conds, db.noIndex("t0.order_row")+` IN (SELECT order_row FROM order_name_tokens WHERE account = ? AND `+match+`)`)
			args = append(args, account, pattern(w))
			continue
		}
		t := fmt.Sprintf("t%d", i+1)
		conds = append(conds, `EXISTS (SELECT 1 FROM order_name_tokens `+t+` WHERE `+t+`.order_row = t0.order_row AND `+t+`.`+match+`)`)
		args = append(args, pattern(w))
	}
	tc, ta := part("order_row")
	conds = slices.Concat(conds, where, tc)
	args = append(append(args, whereArgs...), ta...)
	byWords := `SELECT order_row AS found_id, ` + col + ` AS k FROM order_name_tokens t0 WHERE ` + strings.Join(conds, " AND ")
	if names.exact == "" {
		return found + " UNION " + byWords, args
	}
	if rows > 0 {
		// The page holds at most the first rows of the word's orders: an
		// index of the word's rows in the page's order (PostgreSQL's by
		// created time) is then read until the page is full, where a
		// union's sort would read every one of them.
		byWords = `SELECT found_id, k FROM (` + byWords + ` ORDER BY ` + order + ` LIMIT ` + strconv.Itoa(rows) + `) AS first_found`
	}
	return found + " UNION ALL " + byWords, args
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
