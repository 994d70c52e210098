package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// The indexer keeps the back office's read side (the name words of
// order_name_tokens and report_buckets) off the apply transaction. The apply
// appends one row per changed order to mirror_changes; the indexer takes
// them in id order, indexerBatch at a time, and in one transaction per
// batch rewrites the changed orders' words, moves their figures between
// report_buckets rows (one update per bucket row per batch, in key order),
// deletes the changes it took and records its position. What is left in
// mirror_changes is what the read side does not show yet: on PostgreSQL ids
// commit out of order, so the indexer never skips past a change by its id.

// indexerBatch is how many changes one indexer transaction takes.
const indexerBatch = 1000

// indexerPoll is how often a running indexer looks for changes written by
// another process; changes written through this DB wake it at once.
const indexerPoll = 250 * time.Millisecond

var (
	appendChanges    = rowsSQL{prefix: `INSERT INTO mirror_changes (order_row, at) VALUES `, cols: 2}
	deleteChanges    = rowsSQL{prefix: `DELETE FROM mirror_changes WHERE id IN (`, cols: 1, suffix: `)`}
	deleteFigures    = rowsSQL{prefix: `DELETE FROM report_order_figures WHERE order_row IN (`, cols: 1, suffix: `)`}
	insertFigures    = rowsSQL{prefix: `INSERT INTO report_order_figures (order_row, figure, account, bucket, currency, total_minor) VALUES `, cols: 6}
	upsertBucketRows = rowsSQL{prefix: `INSERT INTO report_buckets (account, bucket, figure, currency, summed, total_minor, unsummed) VALUES `, cols: 7,
		suffix: ` ON CONFLICT (account, bucket, figure, currency) DO UPDATE SET summed = report_buckets.summed + excluded.summed,
    total_minor = report_buckets.total_minor + excluded.total_minor, unsummed = report_buckets.unsummed + excluded.unsummed`}
)

// indexTokens inserts an order's words with the order's sort and filter
// columns read from the row itself. VALUES columns are column1, column2 in
// both dialects; PostgreSQL reads their parameters as text, hence the cast.
func indexTokensSQL() rowsSQL {
	cols := ""
	for _, c := range tokenKeyColumns {
		cols += ", o." + c
	}
	return rowsSQL{prefix: `INSERT INTO order_name_tokens (account, token, order_row, ` + joinColumns(tokenKeyColumns) + `)
SELECT o.account, v.column2, o.id` + cols + ` FROM orders o JOIN (VALUES `, cols: 2,
		suffix: `) AS v ON o.id = CAST(v.column1 AS BIGINT)`}
}

var indexTokens = indexTokensSQL()

func joinColumns(cols []string) string {
	s := ""
	for i, c := range cols {
		if i > 0 {
			s += ", "
		}
		s += c
	}
	return s
}

// bucketExpr is the report_buckets row of an instant at: its quarter hour
// of Unix time.
func (db *DB) bucketExpr(at string) string {
	if db.dialect == DialectPostgres {
		return `floor(extract(epoch FROM ` + at + `) / 900)::bigint`
	}
	return `unixepoch(` + at + `) / 900`
}

// noteChanges appends the changed orders' rows to mirror_changes, in the
// apply's transaction; wakeIndexer is called after its commit.
func (db *DB) noteChanges(ctx context.Context, tx *sqlx.Tx, rows []int64, at time.Time) error {
	values := make([][]any, len(rows))
	flat := make([]any, 2*len(rows))
	when := any(at)
	for i, r := range rows {
		flat[2*i], flat[2*i+1] = r, when
		values[i] = flat[2*i : 2*i+2 : 2*i+2]
	}
	if err := db.execRows(ctx, tx, appendChanges, values); err != nil {
		return fmt.Errorf("log mirror changes: %w", err)
	}
	return nil
}

// wakeIndexer tells a running indexer that changes wait.
func (db *DB) wakeIndexer() {
	select {
	case db.changed <- struct{}{}:
	default:
	}
}

// orderFigure is one figure an order counts in report_buckets.
type orderFigure struct {
	OrderRow   int64  `db:"order_row"`
	Figure     string `db:"figure"`
	Account    string `db:"account"`
	Bucket     int64  `db:"bucket"`
	Currency   string `db:"currency"`
	TotalMinor *int64 `db:"total_minor"`
}

type bucketKey struct {
	account  string
	bucket   int64
	figure   string
	currency string
}

type bucketDelta struct{ summed, total, unsummed int64 }

func (d *bucketDelta) add(f orderFigure, sign int64) {
	if f.TotalMinor == nil {
		d.unsummed += sign
		return
	}
	d.summed += sign
	d.total += sign * *f.TotalMinor
}

// IndexNow runs the indexer until no change is left and says how many it
// took. Tests call it between a write and a read of the read side; the
// reindex command and RunIndexer call it too.
//
// On PostgreSQL the first backlog (a full first batch) since the mirror
// was opened or its read side rebuilt has the read side's tables analyzed
// after its first batch, not every burst of live following: statistics taken while they were
// empty (a rebuild's, or a new mirror's) carry no figure of order_row's
// spread, and the planner then reads them whole for every batch's orders
// instead of by index, a cost that grows with every batch indexed.
func (db *DB) IndexNow(ctx context.Context) (int, error) {
	total := 0
	for batches := 1; ; batches++ {
		n, err := db.indexBatch(ctx)
		total += n
		if err != nil || n < indexerBatch {
			return total, err
		}
		if batches == 1 && db.dialect == DialectPostgres && db.readSideAnalyzed.CompareAndSwap(false, true) {
			if _, err := db.write.ExecContext(ctx, analyzeReadSide); err != nil {
				return total, fmt.Errorf("analyze the read side: %w", err)
			}
		}
	}
}

// analyzeReadSide refreshes the statistics of the tables the indexer reads
// and rewrites by order row.
const analyzeReadSide = `ANALYZE report_order_figures, order_name_tokens, report_buckets`

// RunIndexer indexes changes as they come until ctx ends: at once when this
// DB's apply wakes it, else every indexerPoll. Errors are logged and
// retried at the next poll.
func (db *DB) RunIndexer(ctx context.Context) error {
	t := time.NewTicker(indexerPoll)
	defer t.Stop()
	for {
		if _, err := db.IndexNow(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			db.logger.WarnContext(ctx, "index the read side", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-db.changed:
		case <-t.C:
		}
	}
}

// lockIndexer takes, until tx ends, PostgreSQL's lock of the indexer of
// the mirror in tx's schema. An advisory lock's key is the database's,
// not a schema's, so the key names the schema: mirrors in other schemas
// of one database (deployments, tests) index side by side.
func lockIndexer(ctx context.Context, tx *sqlx.Tx) error {
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('ordersync indexer ' || current_schema()))`); err != nil {
		return fmt.Errorf("lock the indexer: %w", err)
	}
	return nil
}

// indexBatch indexes the oldest indexerBatch changes in one transaction.
func (db *DB) indexBatch(ctx context.Context) (int, error) {
	if err := db.prepareWrites(ctx); err != nil {
		return 0, fmt.Errorf("index the read side: %w", err)
	}
	n := 0
	err := db.inTx(ctx, "index the read side", func(tx *sqlx.Tx) error {
		if db.dialect == DialectPostgres {
			// One indexer at a time: every process that writes the mirror
			// runs one, and two would move the same figures twice.
			if err := lockIndexer(ctx, tx); err != nil {
				return err
			}
		}
		var changes []struct {
			ID       int64 `db:"id"`
			OrderRow int64 `db:"order_row"`
		}
		if err := db.selectTx(ctx, tx, &changes, db.rebind(readChanges), indexerBatch); err != nil {
			return fmt.Errorf("read mirror changes: %w", err)
		}
		n = len(changes)
		if n == 0 {
			return nil
		}
		ids := make([][]any, len(changes))
		var rows []int64
		last := int64(0)
		for i, c := range changes {
			ids[i] = []any{c.ID}
			rows = append(rows, c.OrderRow)
			last = max(last, c.ID)
		}
		slices.Sort(rows)
		rows = slices.Compact(rows)
		if err := db.indexOrders(ctx, tx, rows); err != nil {
			return err
		}
		if err := db.execRows(ctx, tx, deleteChanges, ids); err != nil {
			return fmt.Errorf("delete indexed changes: %w", err)
		}
		if err := db.execTx(ctx, tx, db.rebind(recordPosition), last, dbTime(time.Now())); err != nil {
			return fmt.Errorf("record the indexer's position: %w", err)
		}
		return nil
	})
	return n, err
}

// indexOrders brings the read side of the orders with these row ids (sorted,
// distinct) up to their rows.
func (db *DB) indexOrders(ctx context.Context, tx *sqlx.Tx, rows []int64) error {
	deltas := map[bucketKey]*bucketDelta{}
	move := func(figs []orderFigure, sign int64) {
		for _, f := range figs {
			k := bucketKey{f.Account, f.Bucket, f.Figure, f.Currency}
			d := deltas[k]
			if d == nil {
				d = &bucketDelta{}
				deltas[k] = d
			}
			d.add(f, sign)
		}
	}
	var names []struct {
		ID   int64  `db:"id"`
		Name string `db:"buyer_name"`
	}
	var newFigs []orderFigure
	for chunk := range slices.Chunk(rows, maxInParams) {
		args := inArgs(db.dialect, nil, chunk)
		size := len(args)
		q := db.indexQueries(size)
		var old, now []orderFigure
		if err := db.selectTx(ctx, tx, &old, q.oldFigures, args...); err != nil {
			return fmt.Errorf("read indexed figures: %w", err)
		}
		if err := db.selectTx(ctx, tx, &now, q.figures, args...); err != nil {
			return fmt.Errorf("read the orders' figures: %w", err)
		}
		move(old, -1)
		move(now, 1)
		newFigs = append(newFigs, now...)
		var n []struct {
			ID   int64  `db:"id"`
			Name string `db:"buyer_name"`
		}
		if err := db.selectTx(ctx, tx, &n, q.names, args...); err != nil {
			return fmt.Errorf("read the orders' names: %w", err)
		}
		names = append(names, n...)
	}

	keys := make([]bucketKey, 0, len(deltas))
	for k, d := range deltas {
		if *d != (bucketDelta{}) {
			keys = append(keys, k)
		}
	}
	// Key order, so that two writers of report_buckets (the indexer and a
	// rebuild) take its rows in one order.
	slices.SortFunc(keys, func(a, b bucketKey) int {
		return cmp.Or(cmp.Compare(a.account, b.account), cmp.Compare(a.bucket, b.bucket),
			cmp.Compare(a.figure, b.figure), cmp.Compare(a.currency, b.currency))
	})
	buckets := make([][]any, len(keys))
	for i, k := range keys {
		d := deltas[k]
		buckets[i] = []any{k.account, k.bucket, k.figure, k.currency, d.summed, d.total, d.unsummed}
	}
	ids := make([][]any, len(rows))
	for i, r := range rows {
		ids[i] = []any{r}
	}
	figures := make([][]any, len(newFigs))
	for i, f := range newFigs {
		var total any
		if f.TotalMinor != nil {
			total = *f.TotalMinor
		}
		figures[i] = []any{f.OrderRow, f.Figure, f.Account, f.Bucket, f.Currency, total}
	}
	var tokens [][]any
	for _, n := range names {
		id := strconv.FormatInt(n.ID, 10)
		for _, t := range ordersync.NameTokens(n.Name) {
			tokens = append(tokens, []any{id, t})
		}
	}
	return db.execSteps(ctx, tx, []writeStep{
		{"update report buckets", upsertBucketRows, buckets},
		{"delete indexed figures", deleteFigures, ids},
		{"insert indexed figures", insertFigures, figures},
		{"delete replaced name tokens", deleteTokens, ids},
		{"insert name tokens", indexTokens, tokens},
	})
}

// indexQueries are indexOrders' reads of n orders by row id.
type indexQueries struct{ oldFigures, figures, names string }

func (db *DB) indexQueries(n int) indexQueries {
	in := placeholders(n)
	return indexQueries{
		oldFigures: db.rebind(`SELECT order_row, figure, account, bucket, currency, total_minor
FROM report_order_figures WHERE order_row IN (` + in + `)`),
		figures: db.rebind(`SELECT order_row, figure, account, ` + db.bucketExpr("at") + ` AS bucket, currency, total_minor
FROM internal_report_figures WHERE order_row IN (` + in + `)`),
		names: db.rebind(`SELECT id, buyer_name FROM orders WHERE id IN (` + in + `)`),
	}
}

// The indexer's fixed statements, prepared on SQLite.
const (
	readChanges    = `SELECT id, order_row FROM mirror_changes ORDER BY id LIMIT ?`
	recordPosition = `UPDATE indexer_position SET position = ?, indexed_at = ? WHERE one = 1`
)

// RebuildReadSide empties the read side (report_buckets, the orders'
// figures, the name words) and builds it again from the mirror's orders:
// every order is marked changed, in the transaction that empties it, and
// the indexer takes them all. Meanwhile the read side says it is behind.
// It returns how many orders it indexed.
//
// On PostgreSQL the tables the indexer reads are analyzed first: after a
// restore or a bulk load their statistics say empty, and the planner then
// scans whole tables for every batch.
func (db *DB) RebuildReadSide(ctx context.Context) (int, error) {
	err := db.inTx(ctx, "empty the read side", func(tx *sqlx.Tx) error {
		if db.dialect == DialectPostgres {
			if err := lockIndexer(ctx, tx); err != nil {
				return err
			}
		}
		for _, q := range []string{`DELETE FROM report_buckets`, `DELETE FROM report_order_figures`, `DELETE FROM order_name_tokens`, `DELETE FROM mirror_changes`} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		if _, err := tx.ExecContext(ctx, db.rebind(`INSERT INTO mirror_changes (order_row, at) SELECT id, ? FROM orders ORDER BY id`), dbTime(time.Now())); err != nil {
			return fmt.Errorf("mark every order changed: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if db.dialect == DialectPostgres {
		const analyze = `ANALYZE orders, status_history, mirror_changes, report_order_figures, order_name_tokens, report_buckets`
		if _, err := db.write.ExecContext(ctx, analyze); err != nil {
			return 0, fmt.Errorf("analyze the mirror before indexing it: %w", err)
		}
		// Analyzed empty: the backlog's first batch analyzes it again.
		db.readSideAnalyzed.Store(false)
	}
	return db.IndexNow(ctx)
}

// IndexStatus is how far the read side has come: Pending changes are not
// in it yet, the oldest of them written at Oldest. The read side shows the
// mirror as it was at AsOf: now when nothing is pending, else Oldest.
type IndexStatus struct {
	Pending  int
	Oldest   time.Time
	AsOf     time.Time
	Position int64
}

// Behind says whether changes wait for the indexer.
func (s IndexStatus) Behind() bool { return s.Pending > 0 }

// Lag is the age of the oldest change the indexer has not taken (0 when
// none waits).
func (s IndexStatus) Lag(now time.Time) time.Duration {
	if s.Pending == 0 {
		return 0
	}
	return max(now.Sub(s.Oldest), 0)
}

// IndexStatus reads the indexer's progress.
func (db *DB) IndexStatus(ctx context.Context) (IndexStatus, error) {
	var s IndexStatus
	err := db.inReadTx(ctx, "read the indexer's progress", func(tx *sqlx.Tx) error {
		return db.indexStatus(ctx, tx, &s)
	})
	return s, err
}

// indexStatus reads the indexer's progress within tx, so that a reader
// of the read side says how current its own snapshot is. Pending counts
// at most indexerBatch+1 changes.
func (db *DB) indexStatus(ctx context.Context, tx *sqlx.Tx, s *IndexStatus) error {
	now := time.Now().UTC()
	if err := tx.GetContext(ctx, &s.Pending, db.rebind(`SELECT COUNT(*) FROM (SELECT 1 FROM mirror_changes LIMIT ?) AS c`), indexerBatch+1); err != nil {
		return fmt.Errorf("read mirror changes: %w", err)
	}
	if err := tx.GetContext(ctx, &s.Position, `SELECT position FROM indexer_position`); err != nil {
		return fmt.Errorf("read the indexer's position: %w", err)
	}
	s.AsOf = now
	if s.Pending == 0 {
		return nil
	}
	// The oldest change is the first by id but for PostgreSQL's commits
	// out of order, which the first batch's ids cover.
	q := `SELECT at FROM mirror_changes ORDER BY id LIMIT 1`
	if db.dialect == DialectPostgres {
		q = `SELECT MIN(at) FROM (SELECT at FROM mirror_changes ORDER BY id LIMIT 1000) AS c`
	}
	if err := tx.GetContext(ctx, &s.Oldest, q); err != nil {
		return fmt.Errorf("read the oldest mirror change: %w", err)
	}
	s.Oldest = s.Oldest.UTC()
	s.AsOf = s.Oldest
	return nil
}
