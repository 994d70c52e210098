package store

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jmoiron/sqlx"
)

// stmtCache prepares the single statements of the hot path once per handle
// (database/sql then prepares each on every connection it runs on, once).
// mattn/go-sqlite3 otherwise parses a query on every call; pgx keeps a
// statement cache of its own, so PostgreSQL does not use this.
type stmtCache struct {
	db    *sqlx.DB
	mu    sync.Mutex // serialises preparing, not using
	stmts sync.Map   // query → *sqlx.Stmt
}

// get returns query prepared. On the SQLite write handle it must not be
// called inside a transaction: preparing needs the single connection.
func (c *stmtCache) get(ctx context.Context, query string) (*sqlx.Stmt, error) {
	if s, ok := c.stmts.Load(query); ok {
		return s.(*sqlx.Stmt), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.stmts.Load(query); ok {
		return s.(*sqlx.Stmt), nil
	}
	s, err := c.db.PreparexContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("prepare %.60s…: %w", query, err)
	}
	c.stmts.Store(query, s)
	return s, nil
}

func (c *stmtCache) close() error {
	var err error
	c.stmts.Range(func(_, s any) bool {
		err = errors.Join(err, s.(*sqlx.Stmt).Close())
		return true
	})
	return err
}
