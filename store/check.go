package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"
)

// SchemaVersion returns the version the database's schema is at and the
// version this build migrates it to.
func (db *DB) SchemaVersion(ctx context.Context) (current, latest int64, err error) {
	provider, unlock, err := db.migrations(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer unlock()
	current, latest, err = provider.GetVersions(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("read %s schema version: %w", db.dialect, err)
	}
	return current, latest, nil
}

// errNothingWritten ends CheckWrite's transaction with a rollback.
var errNothingWritten = errors.New("nothing written")

// CheckWrite reports whether this process may write the mirror, without
// writing anything: it takes the write lock (SQLite: the write
// transaction itself; PostgreSQL: a row-exclusive lock on the schema's
// version table, or the right to create tables before the first
// migration) and rolls back.
func (db *DB) CheckWrite(ctx context.Context) error {
	err := db.inTx(ctx, "check write access", func(tx *sqlx.Tx) error {
		if db.dialect == DialectPostgres {
			var exists bool
			if err := tx.GetContext(ctx, &exists, `SELECT to_regclass('goose_db_version') IS NOT NULL`); err != nil {
				return err
			}
			if exists {
				if _, err := tx.ExecContext(ctx, `LOCK TABLE goose_db_version IN ROW EXCLUSIVE MODE NOWAIT`); err != nil {
					return err
				}
			} else {
				var may bool
				if err := tx.GetContext(ctx, &may, `SELECT has_schema_privilege(current_schema(), 'CREATE')`); err != nil {
					return err
				}
				if !may {
					return errors.New("no privilege to create tables in the current schema")
				}
			}
		}
		return errNothingWritten
	})
	if errors.Is(err, errNothingWritten) {
		return nil
	}
	return err
}

// CheckIntegrity runs SQLite's integrity check of the whole file: nil when
// it answers ok, else an error with what it found. PostgreSQL keeps its
// own pages consistent and has none: nil.
func (db *DB) CheckIntegrity(ctx context.Context) error {
	if db.dialect != DialectSQLite {
		return nil
	}
	var found []string
	if err := db.read.SelectContext(ctx, &found, "PRAGMA integrity_check"); err != nil {
		return fmt.Errorf("sqlite integrity check: %w", err)
	}
	if len(found) == 1 && found[0] == "ok" {
		return nil
	}
	return fmt.Errorf("sqlite integrity check: %s", strings.Join(found, "; "))
}
