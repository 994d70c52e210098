package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

type endpointRow struct {
	ID                  string     `db:"id"`
	URL                 string     `db:"url"`
	Events              string     `db:"events"`
	Description         string     `db:"description"`
	Source              string     `db:"source"`
	Disabled            bool       `db:"disabled"`
	DisabledReason      string     `db:"disabled_reason"`
	Secret              string     `db:"secret"`
	PreviousSecret      string     `db:"previous_secret"`
	PreviousSecretUntil *time.Time `db:"previous_secret_until"`
	RatePerSecond       float64    `db:"rate_per_second"`
	CreatedAt           time.Time  `db:"created_at"`
	UpdatedAt           time.Time  `db:"updated_at"`
}

const endpointColumns = `id, url, events, description, source, disabled, disabled_reason, secret, previous_secret, previous_secret_until, rate_per_second, created_at, updated_at`

func (r *endpointRow) endpoint() *ordersync.Endpoint {
	e := &ordersync.Endpoint{
		ID: r.ID, URL: r.URL, Description: r.Description, Source: ordersync.EndpointSource(r.Source),
		Disabled: r.Disabled, DisabledReason: r.DisabledReason, Secret: r.Secret, PreviousSecret: r.PreviousSecret,
		PreviousSecretUntil: utcPtr(r.PreviousSecretUntil), RatePerSecond: r.RatePerSecond, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
	for _, ev := range strings.Split(r.Events, ",") {
		if ev != "" {
			e.Events = append(e.Events, ordersync.HookEvent(ev))
		}
	}
	return e
}

func joinEvents(events []ordersync.HookEvent) string {
	s := make([]string, len(events))
	for i, ev := range events {
		s[i] = string(ev)
	}
	return strings.Join(s, ",")
}

// CreateEndpoint stores a new API endpoint under a generated id (or
// p.ID when given) and returns it. An id in use is ErrConflict.
func (db *DB) CreateEndpoint(ctx context.Context, p ordersync.EndpointParams) (*ordersync.Endpoint, error) {
	if p.ID == "" {
		b := make([]byte, 8)
		rand.Read(b)
		p.ID = "ep_" + hex.EncodeToString(b)
	}
	op := fmt.Sprintf("create endpoint %s", p.ID)
	if err := ordersync.ValidateEndpointParams(p); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	now := dbTime(time.Now())
	err := db.inTx(ctx, op, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, db.rebind(`INSERT INTO endpoints (id, url, events, description, source, secret, rate_per_second, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`), p.ID, p.URL, joinEvents(p.Events), p.Description, string(ordersync.EndpointFromAPI), p.Secret, p.RatePerSecond, now, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	return db.FindEndpoint(ctx, p.ID)
}

// ListEndpoints returns every endpoint, by id.
func (db *DB) ListEndpoints(ctx context.Context) ([]*ordersync.Endpoint, error) {
	var eps []*ordersync.Endpoint
	err := db.inReadTx(ctx, "list endpoints", func(tx *sqlx.Tx) error {
		var rows []endpointRow
		if err := tx.SelectContext(ctx, &rows, `SELECT `+endpointColumns+` FROM endpoints ORDER BY id`); err != nil {
			return err
		}
		eps = make([]*ordersync.Endpoint, len(rows))
		for i := range rows {
			eps[i] = rows[i].endpoint()
		}
		return nil
	})
	return eps, err
}

// FindEndpoint returns one endpoint or ErrNotFound.
func (db *DB) FindEndpoint(ctx context.Context, id string) (*ordersync.Endpoint, error) {
	var ep *ordersync.Endpoint
	err := db.inReadTx(ctx, fmt.Sprintf("find endpoint %s", id), func(tx *sqlx.Tx) error {
		var err error
		ep, err = findEndpoint(ctx, db, tx, id)
		return err
	})
	return ep, err
}

func findEndpoint(ctx context.Context, db *DB, tx *sqlx.Tx, id string) (*ordersync.Endpoint, error) {
	var r endpointRow
	if err := tx.GetContext(ctx, &r, db.rebind(`SELECT `+endpointColumns+` FROM endpoints WHERE id = ?`), id); err != nil {
		return nil, err
	}
	return r.endpoint(), nil
}

// UpdateEndpoint changes the fields u sets. A config endpoint's URL,
// events and description belong to the file: changing them is
// ErrManagedByConfig. Enabling an endpoint clears its disabled reason.
func (db *DB) UpdateEndpoint(ctx context.Context, id string, u ordersync.EndpointUpdate) (*ordersync.Endpoint, error) {
	op := fmt.Sprintf("update endpoint %s", id)
	if err := ordersync.ValidateEndpointUpdate(u); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var ep *ordersync.Endpoint
	err := db.inTx(ctx, op, func(tx *sqlx.Tx) error {
		cur, err := findEndpoint(ctx, db, tx, id)
		if err != nil {
			return err
		}
		if cur.Source == ordersync.EndpointFromConfig && (u.URL != nil || u.Events != nil || u.Description != nil || u.RatePerSecond != nil) {
			return ordersync.ErrManagedByConfig
		}
		if u.URL != nil {
			cur.URL = *u.URL
		}
		if u.Events != nil {
			cur.Events = u.Events
		}
		if u.Description != nil {
			cur.Description = *u.Description
		}
		if u.RatePerSecond != nil {
			cur.RatePerSecond = *u.RatePerSecond
		}
		if u.Disabled != nil && *u.Disabled != cur.Disabled {
			cur.Disabled, cur.DisabledReason = *u.Disabled, ""
			if cur.Disabled {
				cur.DisabledReason = ordersync.DisabledManual
			}
		}
		cur.UpdatedAt = dbTime(time.Now())
		if _, err := tx.ExecContext(ctx, db.rebind(`UPDATE endpoints SET url = ?, events = ?, description = ?, disabled = ?, disabled_reason = ?, rate_per_second = ?, updated_at = ? WHERE id = ?`),
			cur.URL, joinEvents(cur.Events), cur.Description, cur.Disabled, cur.DisabledReason, cur.RatePerSecond, cur.UpdatedAt, id); err != nil {
			return err
		}
		ep = cur
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ep, nil
}

// DisableEndpoint disables an endpoint for a reason, as after a 410 Gone;
// any endpoint may be disabled, a config one included.
func (db *DB) DisableEndpoint(ctx context.Context, id, reason string) error {
	return db.inTx(ctx, fmt.Sprintf("disable endpoint %s", id), func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, db.rebind(`UPDATE endpoints SET disabled = ?, disabled_reason = ?, updated_at = ? WHERE id = ?`),
			true, reason, dbTime(time.Now()), id)
		return oneRow(res, err)
	})
}

// DeleteEndpoint deletes an API endpoint; a config endpoint is
// ErrManagedByConfig (remove it from the file).
func (db *DB) DeleteEndpoint(ctx context.Context, id string) error {
	return db.inTx(ctx, fmt.Sprintf("delete endpoint %s", id), func(tx *sqlx.Tx) error {
		cur, err := findEndpoint(ctx, db, tx, id)
		if err != nil {
			return err
		}
		if cur.Source == ordersync.EndpointFromConfig {
			return ordersync.ErrManagedByConfig
		}
		res, err := tx.ExecContext(ctx, db.rebind(`DELETE FROM endpoints WHERE id = ?`), id)
		return oneRow(res, err)
	})
}

// RotateEndpointSecret makes secret the endpoint's secret; the one it
// replaces keeps signing deliveries until now+grace. A config endpoint's
// secret is the file's: ErrManagedByConfig.
func (db *DB) RotateEndpointSecret(ctx context.Context, id, secret string, grace time.Duration) (*ordersync.Endpoint, error) {
	op := fmt.Sprintf("rotate secret of endpoint %s", id)
	if secret == "" {
		return nil, fmt.Errorf("%s: %w: secret is required", op, ordersync.ErrInvalidEndpoint)
	}
	var ep *ordersync.Endpoint
	err := db.inTx(ctx, op, func(tx *sqlx.Tx) error {
		cur, err := findEndpoint(ctx, db, tx, id)
		if err != nil {
			return err
		}
		if cur.Source == ordersync.EndpointFromConfig {
			return ordersync.ErrManagedByConfig
		}
		if err := rotate(ctx, db, tx, cur, secret, grace); err != nil {
			return err
		}
		ep = cur
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ep, nil
}

func rotate(ctx context.Context, db *DB, tx *sqlx.Tx, cur *ordersync.Endpoint, secret string, grace time.Duration) error {
	now := dbTime(time.Now())
	until := now.Add(grace)
	cur.PreviousSecret, cur.PreviousSecretUntil, cur.Secret, cur.UpdatedAt = cur.Secret, &until, secret, now
	_, err := tx.ExecContext(ctx, db.rebind(`UPDATE endpoints SET secret = ?, previous_secret = ?, previous_secret_until = ?, updated_at = ? WHERE id = ?`),
		cur.Secret, cur.PreviousSecret, until, now, cur.ID)
	return err
}

// SyncConfigEndpoints makes the config endpoints those of params, in one
// transaction: new ones are created, listed ones take the file's URL,
// events, description and secret (a changed secret is a rotation, the old
// one signing for grace more), and config endpoints not listed are deleted.
// A config endpoint keeps its disabled flag across restarts. An id taken by
// an API endpoint is ErrConflict.
func (db *DB) SyncConfigEndpoints(ctx context.Context, params []ordersync.EndpointParams, grace time.Duration) error {
	for _, p := range params {
		if err := ordersync.ValidateEndpointParams(p); err != nil {
			return fmt.Errorf("sync config endpoints: %w", err)
		}
	}
	return db.inTx(ctx, fmt.Sprintf("sync %d config endpoints", len(params)), func(tx *sqlx.Tx) error {
		keep := map[string]bool{}
		now := dbTime(time.Now())
		for _, p := range params {
			keep[p.ID] = true
			cur, err := findEndpoint(ctx, db, tx, p.ID)
			switch {
			case err == nil && cur.Source != ordersync.EndpointFromConfig:
				return fmt.Errorf("endpoint %s: %w: the id belongs to an endpoint created at run time", p.ID, ordersync.ErrConflict)
			case err == nil:
				if cur.Secret != p.Secret {
					if err := rotate(ctx, db, tx, cur, p.Secret, grace); err != nil {
						return err
					}
				}
				if _, err := tx.ExecContext(ctx, db.rebind(`UPDATE endpoints SET url = ?, events = ?, description = ?, rate_per_second = ?, updated_at = ? WHERE id = ?`),
					p.URL, joinEvents(p.Events), p.Description, p.RatePerSecond, now, p.ID); err != nil {
					return err
				}
			case !errors.Is(err, sql.ErrNoRows):
				return err
			default:
				if _, err := tx.ExecContext(ctx, db.rebind(`INSERT INTO endpoints (id, url, events, description, source, secret, rate_per_second, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`), p.ID, p.URL, joinEvents(p.Events), p.Description, string(ordersync.EndpointFromConfig), p.Secret, p.RatePerSecond, now, now); err != nil {
					return err
				}
			}
		}
		var ids []string
		if err := tx.SelectContext(ctx, &ids, db.rebind(`SELECT id FROM endpoints WHERE source = ?`), string(ordersync.EndpointFromConfig)); err != nil {
			return err
		}
		for _, id := range ids {
			if !keep[id] {
				if _, err := tx.ExecContext(ctx, db.rebind(`DELETE FROM endpoints WHERE id = ?`), id); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// oneRow turns a statement that changed no row into ErrNotFound.
func oneRow(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ordersync.ErrNotFound
	}
	return nil
}
