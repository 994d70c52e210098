package store

import (
	"context"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// rebind turns the ? placeholders every query is written with into the
// dialect's own.
func (db *DB) rebind(query string) string {
	if db.dialect == DialectPostgres {
		return sqlx.Rebind(sqlx.DOLLAR, query)
	}
	return query
}

// placeholders returns "?, ?, …" for n arguments.
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

// dbTime is how a time goes into a column: UTC, microseconds (what
// PostgreSQL keeps), so both dialects hand back what they were given.
func dbTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// nullTime maps the zero time to NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return dbTime(t)
}

// nullString maps "" to NULL.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// utcPtr normalises a scanned nullable time.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// Limits of the list queries.
const (
	defaultListLimit = 100
	maxListLimit     = 1000
)

// clampLimit applies a default and a maximum to a caller's limit.
func clampLimit(limit, def, maxLimit int) int {
	switch {
	case limit <= 0:
		return def
	case limit > maxLimit:
		return maxLimit
	}
	return limit
}

// conditions is a list query's WHERE clause, built filter by filter: the
// conditions ANDed, and their arguments in order.
type conditions struct {
	where []string
	args  []any
}

// add appends a condition and the arguments of its placeholders.
func (c *conditions) add(cond string, args ...any) {
	c.where = append(c.where, cond)
	c.args = append(c.args, args...)
}

// equal adds "column = ?" when value is set; an empty value filters nothing.
func (c *conditions) equal(column, value string) {
	if value != "" {
		c.add(column+" = ?", value)
	}
}

// sql is the clause for after WHERE; "1 = 1" matches every row.
func (c *conditions) sql() string {
	return strings.Join(append([]string{"1 = 1"}, c.where...), " AND ")
}

// selectList reads the rows of query in one read transaction and turns
// each into what the caller returns.
func selectList[R, T any](ctx context.Context, db *DB, op, query string, args []any, convert func(*R) T) ([]T, error) {
	var out []T
	err := db.inReadTx(ctx, op, func(tx *sqlx.Tx) error {
		var rows []R
		if err := tx.SelectContext(ctx, &rows, db.rebind(query), args...); err != nil {
			return err
		}
		out = make([]T, len(rows))
		for i := range rows {
			out[i] = convert(&rows[i])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
