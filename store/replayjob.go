package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ordersync/ordersync"
)

var _ ordersync.ReplayJobs = (*DB)(nil)

const replayJobColumns = `id, query, actor, process, state, matched, replayed, failed, more, last_error, started_at, beat_at, ended_at`

type replayJobRow struct {
	ID        int64      `db:"id"`
	Query     string     `db:"query"`
	Actor     string     `db:"actor"`
	Process   string     `db:"process"`
	State     string     `db:"state"`
	Matched   int        `db:"matched"`
	Replayed  int        `db:"replayed"`
	Failed    int        `db:"failed"`
	More      bool       `db:"more"`
	LastError string     `db:"last_error"`
	StartedAt time.Time  `db:"started_at"`
	BeatAt    time.Time  `db:"beat_at"`
	EndedAt   *time.Time `db:"ended_at"`
}

func (r replayJobRow) job() ordersync.ReplayJob {
	j := ordersync.ReplayJob{ID: r.ID, Query: r.Query, Actor: r.Actor, Process: r.Process, State: ordersync.ReplayJobState(r.State),
		Matched: r.Matched, Replayed: r.Replayed, Failed: r.Failed, More: r.More, LastError: r.LastError,
		Started: r.StartedAt.UTC(), Beat: r.BeatAt.UTC()}
	if r.EndedAt != nil {
		j.Ended = r.EndedAt.UTC()
	}
	return j
}

// StartReplayJob records job as running unless another runs; see
// ordersync.ReplayJobs. The running job's heartbeat decides, in the same
// transaction, whether it still runs; the unique index on the running
// state refuses a second job started by another process at the same time.
func (db *DB) StartReplayJob(ctx context.Context, job ordersync.ReplayJob) (ordersync.ReplayJob, error) {
	job.State, job.Beat, job.Ended = ordersync.JobRunning, job.Started, time.Time{}
	err := db.inTx(ctx, "start replay job", func(tx *sqlx.Tx) error {
		// A job whose process stopped beating ended, as far as anyone can
		// tell, at its last beat.
		if _, err := tx.ExecContext(ctx, db.rebind(`UPDATE replay_jobs SET state = ?, ended_at = beat_at
WHERE state = ? AND beat_at < ?`), string(ordersync.JobInterrupted), string(ordersync.JobRunning),
			dbTime(job.Started.Add(-ordersync.ReplayJobStale))); err != nil {
			return err
		}
		return tx.QueryRowxContext(ctx, db.rebind(`INSERT INTO replay_jobs (query, actor, process, state, started_at, beat_at)
VALUES (?, ?, ?, ?, ?, ?) RETURNING id`), job.Query, job.Actor, job.Process, string(job.State),
			dbTime(job.Started), dbTime(job.Started)).Scan(&job.ID)
	})
	if errors.Is(err, ordersync.ErrConflict) {
		var running replayJobRow
		if rerr := db.read.GetContext(ctx, &running, db.rebind(`SELECT `+replayJobColumns+` FROM replay_jobs WHERE state = ?`),
			string(ordersync.JobRunning)); rerr != nil {
			return ordersync.ReplayJob{}, translate("start replay job: read the running one", rerr)
		}
		return running.job(), fmt.Errorf("start replay job: job %d is running: %w", running.ID, ordersync.ErrConflict)
	}
	return job, err
}

// BeatReplayJob records a running job's progress and heartbeat.
func (db *DB) BeatReplayJob(ctx context.Context, id int64, p ordersync.ReplayJobProgress, at time.Time) error {
	return db.updateReplayJob(ctx, fmt.Sprintf("beat replay job %d", id), id, p, ordersync.JobRunning, at)
}

// EndReplayJob records a running job's last progress and how it ended.
func (db *DB) EndReplayJob(ctx context.Context, id int64, p ordersync.ReplayJobProgress, state ordersync.ReplayJobState, at time.Time) error {
	if state == ordersync.JobRunning {
		return fmt.Errorf("end replay job %d: %q is no end", id, state)
	}
	return db.updateReplayJob(ctx, fmt.Sprintf("end replay job %d", id), id, p, state, at)
}

// updateReplayJob writes the progress of job id, which must be running,
// and its new state: running (a beat) or an end.
func (db *DB) updateReplayJob(ctx context.Context, op string, id int64, p ordersync.ReplayJobProgress, state ordersync.ReplayJobState, at time.Time) error {
	var ended any
	if state != ordersync.JobRunning {
		ended = dbTime(at)
	}
	return db.inTx(ctx, op, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, db.rebind(`UPDATE replay_jobs SET matched = ?, replayed = ?, failed = ?, more = ?, last_error = ?,
    state = ?, beat_at = ?, ended_at = ?
WHERE id = ? AND state = ?`), p.Matched, p.Replayed, p.Failed, p.More, p.LastError, string(state), dbTime(at), ended,
			id, string(ordersync.JobRunning))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err == nil {
				err = fmt.Errorf("no running job %d: %w", id, ordersync.ErrNotFound)
			}
			return err
		}
		return nil
	})
}

// FindReplayJob returns job id.
func (db *DB) FindReplayJob(ctx context.Context, id int64) (ordersync.ReplayJob, error) {
	var r replayJobRow
	err := db.read.GetContext(ctx, &r, db.rebind(`SELECT `+replayJobColumns+` FROM replay_jobs WHERE id = ?`), id)
	if err != nil {
		return ordersync.ReplayJob{}, translate(fmt.Sprintf("find replay job %d", id), err)
	}
	return r.job(), nil
}

// ListReplayJobs returns the latest limit jobs, newest first.
func (db *DB) ListReplayJobs(ctx context.Context, limit int) ([]ordersync.ReplayJob, error) {
	var rows []replayJobRow
	if err := db.read.SelectContext(ctx, &rows, db.rebind(`SELECT `+replayJobColumns+` FROM replay_jobs ORDER BY id DESC LIMIT ?`), limit); err != nil {
		return nil, translate("list replay jobs", err)
	}
	out := make([]ordersync.ReplayJob, len(rows))
	for i, r := range rows {
		out[i] = r.job()
	}
	return out, nil
}

// PruneReplayJobs deletes up to limit replay jobs that ended before
// endedBefore, oldest first, and returns how many it deleted. A job still
// marked running whose heartbeat is that old had its process die: it
// ended, as far as anyone can tell, at its last beat.
func (db *DB) PruneReplayJobs(ctx context.Context, endedBefore time.Time, limit int) (int, error) {
	return db.pruneBefore(ctx, "prune replay jobs", "replay_jobs", "id", "COALESCE(ended_at, beat_at)", endedBefore, limit)
}
