package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

// RecordAudit appends one action to the audit trail; At defaults to now.
func (db *DB) RecordAudit(ctx context.Context, rec ordersync.AuditRecord) error {
	if err := ordersync.ValidateAuditRecord(rec); err != nil {
		return fmt.Errorf("record audit: %w", err)
	}
	if rec.At.IsZero() {
		rec.At = time.Now()
	}
	return db.inTx(ctx, "record audit "+rec.Action, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, db.rebind(`INSERT INTO audit_log (at, actor, role, via, action, object, outcome) VALUES (?, ?, ?, ?, ?, ?, ?)`),
			dbTime(rec.At), ordersync.Clip(rec.Actor, 200), string(rec.Role), string(rec.Via), ordersync.Clip(rec.Action, 200),
			ordersync.Clip(rec.Object, 500), ordersync.Clip(rec.Outcome, 600))
		return err
	})
}

type auditRow struct {
	ID      int64     `db:"id"`
	At      time.Time `db:"at"`
	Actor   string    `db:"actor"`
	Role    string    `db:"role"`
	Via     string    `db:"via"`
	Action  string    `db:"action"`
	Object  string    `db:"object"`
	Outcome string    `db:"outcome"`
}

// ListAudit returns one page of the audit trail, newest first, by keyset
// on the id: a page after filter.Before is the same whatever was recorded
// since the first. Limit defaults to 100 and is capped at 1000.
func (db *DB) ListAudit(ctx context.Context, filter ordersync.AuditFilter) (ordersync.AuditPage, error) {
	var c conditions
	// Who and what in any case: the actor by its lower-case index, the
	// actions being lower case.
	if filter.Actor != "" {
		c.add("lower(actor) = ?", strings.ToLower(filter.Actor))
	}
	c.equal("action", strings.ToLower(filter.Action))
	if !filter.Since.IsZero() {
		c.add("at >= ?", dbTime(filter.Since))
	}
	if !filter.Until.IsZero() {
		c.add("at < ?", dbTime(filter.Until))
	}
	if filter.Before > 0 {
		c.add("id < ?", filter.Before)
	}
	limit := clampLimit(filter.Limit, defaultListLimit, maxListLimit)
	// One row more than the page says whether another page follows.
	args := append(c.args, limit+1)
	query := `SELECT id, at, actor, role, via, action, object, outcome FROM audit_log WHERE ` +
		c.sql() + ` ORDER BY id DESC LIMIT ?`
	var page ordersync.AuditPage
	err := db.inReadTx(ctx, "list audit", func(tx *sqlx.Tx) error {
		var rows []auditRow
		if err := tx.SelectContext(ctx, &rows, db.rebind(query), args...); err != nil {
			return err
		}
		if len(rows) > limit {
			rows = rows[:limit]
			page.Next = rows[limit-1].ID
		}
		page.Records = make([]ordersync.AuditRecord, len(rows))
		for i, r := range rows {
			page.Records[i] = ordersync.AuditRecord{ID: r.ID, At: r.At.UTC(), Actor: r.Actor, Role: ordersync.Role(r.Role),
				Via: ordersync.Via(r.Via), Action: r.Action, Object: r.Object, Outcome: r.Outcome}
		}
		return nil
	})
	return page, err
}

// PruneAuditLog deletes up to limit audit records made before before,
// oldest first, and returns how many it deleted.
func (db *DB) PruneAuditLog(ctx context.Context, before time.Time, limit int) (int, error) {
	return db.pruneBefore(ctx, "prune audit log", "audit_log", "id", "at", before, limit)
}

// CreateConsoleSession keeps a new session.
func (db *DB) CreateConsoleSession(ctx context.Context, s ordersync.ConsoleSession) error {
	if s.ID == "" || s.TokenIdentity == "" {
		return fmt.Errorf("create console session: the ID and TokenIdentity are required")
	}
	return db.inTx(ctx, "create console session", func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, db.rebind(`INSERT INTO console_sessions (id, token_identity, token_name, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`),
			s.ID, s.TokenIdentity, s.TokenName, dbTime(s.CreatedAt), dbTime(s.ExpiresAt))
		return err
	})
}

// FindConsoleSession returns the session id, or ErrNotFound when it is not
// kept or expired at now.
func (db *DB) FindConsoleSession(ctx context.Context, id string, now time.Time) (ordersync.ConsoleSession, error) {
	var row struct {
		ID            string    `db:"id"`
		TokenIdentity string    `db:"token_identity"`
		TokenName     string    `db:"token_name"`
		CreatedAt     time.Time `db:"created_at"`
		ExpiresAt     time.Time `db:"expires_at"`
	}
	err := db.inReadTx(ctx, "find console session", func(tx *sqlx.Tx) error {
		return tx.GetContext(ctx, &row, db.rebind(`SELECT id, token_identity, token_name, created_at, expires_at
FROM console_sessions WHERE id = ? AND expires_at > ?`), id, dbTime(now))
	})
	if err != nil {
		return ordersync.ConsoleSession{}, err
	}
	return ordersync.ConsoleSession{ID: row.ID, TokenIdentity: row.TokenIdentity, TokenName: row.TokenName,
		CreatedAt: row.CreatedAt.UTC(), ExpiresAt: row.ExpiresAt.UTC()}, nil
}

// DeleteConsoleSession ends a session; ending one already gone is no error.
func (db *DB) DeleteConsoleSession(ctx context.Context, id string) error {
	return db.inTx(ctx, "delete console session", func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, db.rebind(`DELETE FROM console_sessions WHERE id = ?`), id)
		return err
	})
}

// PruneConsoleSessions deletes up to limit sessions expired before
// before, and returns how many it deleted.
func (db *DB) PruneConsoleSessions(ctx context.Context, before time.Time, limit int) (int, error) {
	return db.pruneBefore(ctx, "prune console sessions", "console_sessions", "id", "expires_at", before, limit)
}

var (
	_ ordersync.AuditLog        = (*DB)(nil)
	_ ordersync.ConsoleSessions = (*DB)(nil)
)
