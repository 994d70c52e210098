package store

import (
	"context"
	"sort"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

var _ ordersync.ReceiverHeartbeats = (*DB)(nil)

// RecordReceiverBeats writes a receiver's beats, one row per receiver and
// account, in one transaction.
func (db *DB) RecordReceiverBeats(ctx context.Context, beats []ordersync.ReceiverBeat) error {
	return db.inTx(ctx, "record receiver beats", func(tx *sqlx.Tx) error {
		for _, b := range beats {
			_, err := tx.ExecContext(ctx, db.rebind(`
INSERT INTO receiver_heartbeats (receiver_id, account, started_at, beat_at, accepted, unavailable, refused)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (receiver_id, account) DO UPDATE SET
    beat_at = excluded.beat_at, accepted = excluded.accepted,
    unavailable = excluded.unavailable, refused = excluded.refused`),
				b.ReceiverID, b.Account, dbTime(b.StartedAt), dbTime(b.BeatAt), b.Accepted, b.Unavailable, b.Refused)
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// ListReceiverBeats returns account's beats of receivers that beat at or
// after since, oldest start first.
func (db *DB) ListReceiverBeats(ctx context.Context, account string, since time.Time) ([]ordersync.ReceiverBeat, error) {
	type row struct {
		ReceiverID  string    `db:"receiver_id"`
		Account     string    `db:"account"`
		StartedAt   time.Time `db:"started_at"`
		BeatAt      time.Time `db:"beat_at"`
		Accepted    int64     `db:"accepted"`
		Unavailable int64     `db:"unavailable"`
		Refused     int64     `db:"refused"`
	}
	var beats []ordersync.ReceiverBeat
	err := db.inReadTx(ctx, "list receiver beats of "+account, func(tx *sqlx.Tx) error {
		var rows []row
		if err := tx.SelectContext(ctx, &rows, db.rebind(`SELECT receiver_id, account, started_at, beat_at, accepted, unavailable, refused
FROM receiver_heartbeats WHERE account = ? AND beat_at >= ?`), account, dbTime(since)); err != nil {
			return err
		}
		for _, r := range rows {
			beats = append(beats, ordersync.ReceiverBeat{ReceiverID: r.ReceiverID, Account: r.Account,
				StartedAt: r.StartedAt.UTC(), BeatAt: r.BeatAt.UTC(),
				WebhookCounts: ordersync.WebhookCounts{Accepted: r.Accepted, Unavailable: r.Unavailable, Refused: r.Refused}})
		}
		return nil
	})
	sort.SliceStable(beats, func(i, j int) bool { return beats[i].StartedAt.Before(beats[j].StartedAt) })
	return beats, err
}

// PruneReceiverBeats deletes the beats older than before.
func (db *DB) PruneReceiverBeats(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := db.inTx(ctx, "prune receiver beats", func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, db.rebind(`DELETE FROM receiver_heartbeats WHERE beat_at < ?`), dbTime(before))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}
