package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jmoiron/sqlx"
	"github.com/mattn/go-sqlite3"

	"github.com/ordersync/ordersync"
)

// inTx runs fn in a write transaction, committed when fn returns nil.
func (db *DB) inTx(ctx context.Context, op string, fn func(tx *sqlx.Tx) error) error {
	tx, err := db.write.BeginTxx(ctx, nil)
	if err != nil {
		return translate(op, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return translate(op, err)
	}
	if err := tx.Commit(); err != nil {
		return translate(op, fmt.Errorf("commit: %w", err))
	}
	db.boundWAL(ctx)
	return nil
}

// inReadTx runs fn in a read-only transaction: one consistent snapshot.
func (db *DB) inReadTx(ctx context.Context, op string, fn func(tx *sqlx.Tx) error) error {
	opts := &sql.TxOptions{ReadOnly: true}
	if db.dialect == DialectPostgres {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := db.read.BeginTxx(ctx, opts)
	if err != nil {
		return translate(op, err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to keep
	return translate(op, fn(tx))
}

// translate turns a driver error into the domain's, wrapped with op.
func translate(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ordersync.ErrNotFound), errors.Is(err, ordersync.ErrConflict):
		return fmt.Errorf("%s: %w", op, err)
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%s: %w", op, ordersync.ErrNotFound)
	case isUniqueViolation(err):
		return fmt.Errorf("%s: %w: %w", op, ordersync.ErrConflict, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

func isUniqueViolation(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23505" // unique_violation
	}
	return false
}
