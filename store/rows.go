package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/jmoiron/sqlx"
)

// maxRowsPerStatement bounds a multi-row statement: 64 orders of 38 columns
// stay far below both dialects' parameter limits. Smaller statements come in
// powers of two, so a handful of prepared statements covers every batch.
const maxRowsPerStatement = 64

// rowsSQL is a statement that takes a variable number of rows: prefix,
// then n copies of the row's placeholders separated by commas, then suffix.
type rowsSQL struct {
	prefix string
	cols   int
	suffix string
}

func (r rowsSQL) sql(n int) string {
	row := "(" + placeholders(r.cols) + ")"
	var b strings.Builder
	b.Grow(len(r.prefix) + n*(len(row)+2) + len(r.suffix))
	b.WriteString(r.prefix)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	b.WriteString(r.suffix)
	return b.String()
}

// chunkSizes splits n rows into statements of maxRowsPerStatement rows and
// then powers of two: 100 is 64 + 32 + 4.
func chunkSizes(n int) []int {
	var sizes []int
	for n > 0 {
		size := maxRowsPerStatement
		for size > n {
			size /= 2
		}
		sizes = append(sizes, size)
		n -= size
	}
	return sizes
}

// execRows runs r over rows (each holding r.cols arguments), in as few
// statements as chunkSizes allows.
func (db *DB) execRows(ctx context.Context, tx *sqlx.Tx, r rowsSQL, rows [][]any) error {
	return db.queryRows(ctx, tx, r, rows, nil)
}

// queryRows is execRows for a statement that returns rows (RETURNING):
// scan is called for each.
func (db *DB) queryRows(ctx context.Context, tx *sqlx.Tx, r rowsSQL, rows [][]any, scan func(*sql.Rows) error) error {
	if len(rows) == 0 {
		return nil
	}
	// The arguments are a pooled slice: database/sql converts them before
	// the statement runs and keeps none, and a batch's statements take
	// thousands.
	buf := argsPool.Get().(*[]any)
	defer func() {
		clear((*buf)[:cap(*buf)])
		argsPool.Put(buf)
	}()
	args := slices.Grow((*buf)[:0], min(len(rows), maxRowsPerStatement)*r.cols)
	*buf = args
	for _, size := range chunkSizes(len(rows)) {
		args = args[:0]
		for _, row := range rows[:size] {
			if len(row) != r.cols {
				return fmt.Errorf("statement row has %d values, want %d", len(row), r.cols)
			}
			args = append(args, row...)
		}
		rows = rows[size:]
		if err := db.queryTx(ctx, tx, scan, db.rowsStatement(r, size), args...); err != nil {
			return err
		}
	}
	return nil
}

var argsPool = sync.Pool{New: func() any { return new([]any) }}

// rowsKey is one size of a rowsSQL statement.
type rowsKey struct {
	r rowsSQL
	n int
}

// rowsStmt is one size of a rowsSQL statement: its text in the DB's
// dialect and, on SQLite once prepareWrites ran, the statement prepared.
type rowsStmt struct {
	query string
	stmt  *sql.Stmt
}

// rowsStatement returns the statement of n rows of r, its text built once
// per handle: a batch's statements are several kilobytes of text, which
// building and hashing on every call would cost again.
func (db *DB) rowsStatement(r rowsSQL, n int) rowsStmt {
	k := rowsKey{r, n}
	if s, ok := db.rowsStmts.Load(k); ok {
		return s.(rowsStmt)
	}
	s, _ := db.rowsStmts.LoadOrStore(k, rowsStmt{query: db.rebind(r.sql(n))})
	return s.(rowsStmt)
}

// queryTx runs s in tx and calls scan, if not nil, for each row it
// returns. On SQLite a statement prepared by prepareWrites runs as that
// statement: the single write connection parses it once, not once per
// batch. It runs through Query, not Exec: mattn/go-sqlite3 binds a query's
// arguments and takes its first step in one cgo call, where Exec makes one
// call per argument, which dominates multi-row statements. PostgreSQL's
// driver keeps its own cache of prepared statements per connection.
func (db *DB) queryTx(ctx context.Context, tx *sqlx.Tx, scan func(*sql.Rows) error, s rowsStmt, args ...any) error {
	var (
		rows *sql.Rows
		err  error
	)
	switch {
	case s.stmt != nil:
		rows, err = tx.StmtContext(ctx, s.stmt).QueryContext(ctx, args...)
	case scan != nil:
		rows, err = tx.QueryContext(ctx, s.query, args...)
	default:
		_, err = tx.ExecContext(ctx, s.query, args...)
		return err
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	for scan != nil && rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	return rows.Err()
}

// preparedRows are the multi-row statements prepareWrites prepares: those of
// ApplyOrders, the indexer's and the delivery log's, which run for every
// batch of orders and of deliveries.
var preparedRows = append(slices.Clip(applyStatements), upsertDeliveries,
	deleteChanges, deleteFigures, insertFigures, upsertBucketRows, deleteTokens, indexTokens)

// prepareWrites prepares, once, the SQLite statements ApplyOrders, the
// indexer and RecordDeliveries use: every multi-row statement in every
// chunk size, and the reads of the orders' states, stored documents and
// payment webhooks and the indexer's in every padded size. It runs outside any
// transaction, as the write pool's single connection must be free to
// prepare on.
func (db *DB) prepareWrites(ctx context.Context) error {
	if db.dialect != DialectSQLite {
		return nil
	}
	db.prepareMu.Lock()
	defer db.prepareMu.Unlock()
	if db.prepared.Load() != nil {
		return nil
	}
	var queries []string
	for _, r := range preparedRows {
		for size := 1; size <= maxRowsPerStatement; size *= 2 {
			queries = append(queries, r.sql(size))
		}
	}
	for size := 1; size <= stateQuerySize(maxInParams); size *= 2 {
		q := db.indexQueries(size)
		queries = append(queries, stateQuery(size), previousDocumentsQuery(size), announcementsQuery(size), q.oldFigures, q.figures, q.names)
	}
	queries = append(queries, readChanges, recordPosition, denseChecksQuery)
	prepared := make(map[string]*sql.Stmt, len(queries))
	for _, query := range queries {
		stmt, err := db.write.PrepareContext(ctx, query)
		if err != nil {
			for _, s := range prepared {
				s.Close()
			}
			return fmt.Errorf("prepare %.60s…: %w", query, err)
		}
		prepared[query] = stmt
	}
	for _, r := range preparedRows {
		for size := 1; size <= maxRowsPerStatement; size *= 2 {
			db.rowsStmts.Store(rowsKey{r, size}, rowsStmt{query: r.sql(size), stmt: prepared[r.sql(size)]})
		}
	}
	db.prepared.Store(&prepared)
	return nil
}

// txPrepared is query's statement prepared by prepareWrites, in tx; nil
// where it has none (PostgreSQL, or a query it does not prepare).
func (db *DB) txPrepared(ctx context.Context, tx *sqlx.Tx, query string) *sqlx.Stmt {
	if stmts := db.prepared.Load(); stmts != nil {
		if s := (*stmts)[query]; s != nil {
			return tx.StmtxContext(ctx, s)
		}
	}
	return nil
}

// selectTx is tx.SelectContext, through the statement prepareWrites
// prepared for query where there is one.
func (db *DB) selectTx(ctx context.Context, tx *sqlx.Tx, dest any, query string, args ...any) error {
	if s := db.txPrepared(ctx, tx, query); s != nil {
		return s.SelectContext(ctx, dest, args...)
	}
	return tx.SelectContext(ctx, dest, query, args...)
}

// execTx is tx.ExecContext, through the statement prepareWrites prepared
// for query where there is one.
func (db *DB) execTx(ctx context.Context, tx *sqlx.Tx, query string, args ...any) error {
	var err error
	if s := db.txPrepared(ctx, tx, query); s != nil {
		_, err = s.ExecContext(ctx, args...)
	} else {
		_, err = tx.ExecContext(ctx, query, args...)
	}
	return err
}

// maxPreparedShapes bounds how many statements prepareRows prepares: the
// updates of changed orders come in as many shapes as the sets of columns
// that change, a handful in practice, and a hostile mix must not make it
// prepare without end.
const maxPreparedShapes = 256

// unpreparedRows are the sizes of r that n rows run in and that have no
// prepared statement, on SQLite; none on PostgreSQL.
func (db *DB) unpreparedRows(r rowsSQL, n int) []rowsKey {
	if db.dialect != DialectSQLite {
		return nil
	}
	var keys []rowsKey
	for _, size := range chunkSizes(n) {
		if db.rowsStatement(r, size).stmt == nil {
			keys = append(keys, rowsKey{r, size})
		}
	}
	return keys
}

// prepareRows prepares the statements of keys on SQLite's write handle,
// up to maxPreparedShapes in all: it runs outside any transaction, after
// the commit of the batch that first ran them. A statement that does not
// prepare stays unprepared: its batch ran it, so the next one reports any
// error.
func (db *DB) prepareRows(ctx context.Context, keys []rowsKey) {
	for _, k := range keys {
		if db.rowsStatement(k.r, k.n).stmt != nil {
			continue
		}
		if db.preparedShapes.Add(1) > maxPreparedShapes {
			return
		}
		query := k.r.sql(k.n)
		s, err := db.writeStmts.get(ctx, query)
		if err != nil {
			return
		}
		db.rowsStmts.Store(k, rowsStmt{query: query, stmt: s.Stmt})
	}
}

// queryTxRows runs query in tx, through the statement prepareWrites
// prepared for it where there is one, and calls scan for each row.
func (db *DB) queryTxRows(ctx context.Context, tx *sqlx.Tx, query string, scan func(*sql.Rows) error, args ...any) error {
	var (
		rows *sql.Rows
		err  error
	)
	if s := db.txPrepared(ctx, tx, query); s != nil {
		rows, err = s.QueryContext(ctx, args...)
	} else {
		rows, err = tx.QueryContext(ctx, query, args...)
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
