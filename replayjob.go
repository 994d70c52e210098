package ordersync

import (
	"context"
	"time"
)

// ReplayJob is a console job replaying every dead letter a filter matches,
// as the mirror keeps it: every process's console shows it, and a job
// whose process died reads as interrupted once its heartbeat is stale.
type ReplayJob struct {
	ID int64
	// Query is the filter as the console's URL gives it.
	Query string
	// Actor started it; Process runs it (host and process id).
	Actor, Process string
	// Matched is how many letters the filter matched when the job read it
	// (at most the job's cap; More says there were more); Replayed went
	// back to the queue, Failed could not; LastError is the last failure.
	Matched, Replayed, Failed int
	More                      bool
	LastError                 string
	// State is as recorded: a running job whose process died stays
	// running in the mirror until another job starts; StateAt says what
	// it is.
	State ReplayJobState
	// Beat is the running job's latest heartbeat; Ended is zero until it
	// ends.
	Started, Beat, Ended time.Time
}

// ReplayJobState is where a replay job is.
type ReplayJobState string

// A job runs, then finishes (every letter tried), stops (its process
// closed or it ran out of time), or is interrupted (its process stopped
// beating).
const (
	JobRunning     ReplayJobState = "running"
	JobFinished    ReplayJobState = "finished"
	JobStopped     ReplayJobState = "stopped"
	JobInterrupted ReplayJobState = "interrupted"
)

// ReplayJobBeat is how often a running job writes its progress and
// heartbeat; ReplayJobStale is how old its heartbeat may be before the job
// counts as interrupted (several beats missed, not one slow write).
const (
	ReplayJobBeat  = 2 * time.Second
	ReplayJobStale = 30 * time.Second
)

// StateAt is the job's state at now: a running job whose heartbeat is
// older than ReplayJobStale is interrupted.
func (j ReplayJob) StateAt(now time.Time) ReplayJobState {
	if j.State == JobRunning && now.Sub(j.Beat) > ReplayJobStale {
		return JobInterrupted
	}
	return j.State
}

// ReplayJobProgress is what a running job has done so far.
type ReplayJobProgress struct {
	Matched, Replayed, Failed int
	More                      bool
	LastError                 string
}

// ReplayJobs keeps the console's replay jobs in the mirror.
type ReplayJobs interface {
	// StartReplayJob records job (Query, Actor, Process, Started) as
	// running, first recording as interrupted the running jobs whose
	// heartbeat is stale at job.Started. While another job runs it
	// returns that job and ErrConflict: one job at a time, across
	// processes.
	StartReplayJob(ctx context.Context, job ReplayJob) (ReplayJob, error)
	// BeatReplayJob records a running job's progress and heartbeat at;
	// ErrNotFound when it is no longer running (another process recorded
	// it interrupted), and the job should stop.
	BeatReplayJob(ctx context.Context, id int64, p ReplayJobProgress, at time.Time) error
	// EndReplayJob records a running job's last progress and how it ended.
	EndReplayJob(ctx context.Context, id int64, p ReplayJobProgress, state ReplayJobState, at time.Time) error
	FindReplayJob(ctx context.Context, id int64) (ReplayJob, error)
	// ListReplayJobs returns the latest limit jobs, newest first.
	ListReplayJobs(ctx context.Context, limit int) ([]ReplayJob, error)
}
