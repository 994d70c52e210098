package admin

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ordersync/ordersync"
)

// Replay jobs: "replay every letter this filter matches" from the console,
// run in the background so that neither the request nor its timeouts
// bound how many letters it covers.
//
// A job lives in the memory of the process that runs it, not in the
// mirror. What must survive is already durable: each letter is marked
// replayed in the mirror as it goes back to the queue, so after a restart
// the letters a job had not reached are still listed, and the same filter
// replays exactly those. The job record is only the progress of work this
// process does, which ends with it; keeping it in the mirror would need a
// table for a view of a few minutes.

// Bounds of replay jobs.
const (
	// maxJobLetters is the most letters one job replays; a filter matching
	// more says so, and another job takes the rest.
	maxJobLetters = 10_000
	// jobPage is how many letters one read of the filter takes (the
	// store's cap of a listing).
	jobPage = 1000
	// jobTimeout bounds a job's run.
	jobTimeout = 30 * time.Minute
	// keptJobs is how many finished jobs the process remembers.
	keptJobs = 20
)

// ReplayJob is the record of a replay job, as the console shows it.
type ReplayJob struct {
	ID int64
	// Query is the filter as the console's URL gives it.
	Query  string
	Filter ordersync.DeadLetterFilter
	Actor  string
	// Matched is how many letters the filter matched when the job read it
	// (at most maxJobLetters; More says there were more); Replayed went
	// back to the queue, Failed could not.
	Matched, Replayed, Failed int
	More                      bool
	// LastError is the last failure's, when any.
	LastError        string
	Started, Ended   time.Time
	Running, Stopped bool
}

// replayJob is a job and the channel closed when it ends.
type replayJob struct {
	rec  ReplayJob
	done chan struct{}
}

// replayJobs are the process's jobs: at most one running, the last
// keptJobs remembered.
type replayJobs struct {
	mu     sync.Mutex
	nextID int64
	jobs   []*replayJob // oldest first
	// ctx ends the running job when the server closes; wg waits for it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newReplayJobs() *replayJobs {
	ctx, cancel := context.WithCancel(context.Background())
	return &replayJobs{ctx: ctx, cancel: cancel}
}

// errJobRunning refuses a job while another runs: each publishes to the
// queue as fast as it can, and one at a time keeps that to one stream.
var errJobRunning = errors.New("a replay job is running")

// errClosing refuses a job once the server closes.
var errClosing = errors.New("the server is shutting down")

// start begins a job replaying what f selects, unless one is running.
func (s *Server) startReplayJob(f ordersync.DeadLetterFilter, query, actor string) (ReplayJob, error) {
	js := s.jobs
	js.mu.Lock()
	defer js.mu.Unlock()
	for _, j := range js.jobs {
		if j.rec.Running {
			return j.rec, errJobRunning
		}
	}
	if js.ctx.Err() != nil {
		return ReplayJob{}, errClosing
	}
	js.nextID++
	f.IncludeReplayed, f.BeforeID, f.Limit = false, 0, 0
	j := &replayJob{rec: ReplayJob{ID: js.nextID, Query: query, Filter: f, Actor: actor, Started: s.cfg.Clock(), Running: true},
		done: make(chan struct{})}
	js.jobs = append(js.jobs, j)
	if len(js.jobs) > keptJobs {
		js.jobs = js.jobs[1:]
	}
	js.wg.Add(1)
	go func() {
		defer js.wg.Done()
		defer close(j.done)
		s.runReplayJob(j)
	}()
	return j.rec, nil
}

// runReplayJob reads every letter the filter selects, then replays each
// through the Replayer, the one replay path; a letter that fails is
// counted and the job goes on.
func (s *Server) runReplayJob(j *replayJob) {
	js := s.jobs
	ctx, cancel := context.WithTimeout(js.ctx, jobTimeout)
	defer cancel()
	update := func(fn func(*ReplayJob)) {
		js.mu.Lock()
		fn(&j.rec)
		js.mu.Unlock()
	}
	fail := func(err error) {
		update(func(r *ReplayJob) { r.Failed++; r.LastError = err.Error() })
	}
	defer update(func(r *ReplayJob) {
		r.Running, r.Ended, r.Stopped = false, s.cfg.Clock(), ctx.Err() != nil
	})

	// The letters are read first, newest first in pages by id, so the job
	// replays the letters the filter matched when it started: not those a
	// replay dead-letters again meanwhile (they are newer).
	var ids []int64
	f := j.rec.Filter
	for len(ids) < maxJobLetters {
		f.Limit = min(jobPage, maxJobLetters-len(ids))
		page, err := s.cfg.DeadLetters.ListDeadLetters(ctx, f)
		if err != nil {
			update(func(r *ReplayJob) { r.LastError = fmt.Sprintf("list dead letters: %v", err) })
			return
		}
		for _, dl := range page {
			ids = append(ids, dl.ID)
		}
		update(func(r *ReplayJob) { r.Matched = len(ids) })
		if len(page) < f.Limit {
			break
		}
		f.BeforeID = page[len(page)-1].ID
	}
	if len(ids) == maxJobLetters {
		f.Limit = 1
		if more, err := s.cfg.DeadLetters.ListDeadLetters(ctx, f); err == nil && len(more) > 0 {
			update(func(r *ReplayJob) { r.More = true })
		}
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		if err := s.cfg.Replayer.ReplayDeadLetter(ctx, id); err != nil {
			fail(err)
			continue
		}
		update(func(r *ReplayJob) { r.Replayed++ })
	}
}

// replayJob is the record of job id, and false when the process does not
// remember it.
func (s *Server) replayJob(id int64) (ReplayJob, bool) {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	for _, j := range s.jobs.jobs {
		if j.rec.ID == id {
			return j.rec, true
		}
	}
	return ReplayJob{}, false
}

// replayJobList is the records of the jobs remembered, newest first.
func (s *Server) replayJobList() []ReplayJob {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	out := make([]ReplayJob, 0, len(s.jobs.jobs))
	for i := len(s.jobs.jobs) - 1; i >= 0; i-- {
		out = append(out, s.jobs.jobs[i].rec)
	}
	return out
}

// WaitReplayJob waits until job id has ended and returns its record; false
// when the process does not remember it.
func (s *Server) WaitReplayJob(ctx context.Context, id int64) (ReplayJob, bool, error) {
	s.jobs.mu.Lock()
	var done chan struct{}
	for _, j := range s.jobs.jobs {
		if j.rec.ID == id {
			done = j.done
		}
	}
	s.jobs.mu.Unlock()
	if done == nil {
		return ReplayJob{}, false, nil
	}
	select {
	case <-done:
	case <-ctx.Done():
		return ReplayJob{}, true, ctx.Err()
	}
	rec, ok := s.replayJob(id)
	return rec, ok, nil
}

// Close stops the running replay job, if any (the letter in hand is given
// up unless it is on the queue already), and waits for it: the letters it
// had not replayed stay dead letters, listed for the next one.
// Call it before closing what the Replayer publishes to.
func (s *Server) Close() {
	s.jobs.cancel()
	s.jobs.wg.Wait()
}
