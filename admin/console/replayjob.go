package console

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ordersync/ordersync"
)

// Replay jobs: "replay every letter this filter matches" from the console,
// run in the background so that neither the request nor its timeouts
// bound how many letters it covers.
//
// The job's record is in the mirror (cfg.ReplayJobs), so every process's
// console shows it and a restart of a viewer forgets nothing: the running
// job writes its progress and a heartbeat every ordersync.ReplayJobBeat,
// and one whose process died reads as interrupted once the heartbeat is
// stale. Each letter is marked replayed in the mirror as it goes back to
// the queue, so the letters a job had not reached are still listed, and
// the same filter replays exactly those.

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
	// keptJobs is how many jobs the Dead letters page lists.
	keptJobs = 20
)

// replayJobs is the job this process runs, if any: the mirror holds the
// records, the process what it needs to stop and wait for its own.
type replayJobs struct {
	// process names this process in the records of its jobs.
	process string
	mu      sync.Mutex
	// done holds, per job this process ran, the channel closed when it
	// ended.
	done map[int64]chan struct{}
	// ctx ends the running job when the server closes; wg waits for it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newReplayJobs() *replayJobs {
	ctx, cancel := context.WithCancel(context.Background())
	host, _ := os.Hostname()
	return &replayJobs{process: fmt.Sprintf("%s pid %d", host, os.Getpid()), done: map[int64]chan struct{}{}, ctx: ctx, cancel: cancel}
}

// errJobRunning refuses a job while another runs, in any process: each
// publishes to the queue as fast as it can, and one at a time keeps that
// to one stream.
var errJobRunning = errors.New("a replay job is running")

// errClosing refuses a job once the server closes.
var errClosing = errors.New("the server is shutting down")

// startReplayJob records and begins a job replaying what f selects,
// unless one is running (then it returns that one and errJobRunning).
func (s *Console) startReplayJob(f ordersync.DeadLetterFilter, query, actor string) (ordersync.ReplayJob, error) {
	js := s.jobs
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.ctx.Err() != nil {
		return ordersync.ReplayJob{}, errClosing
	}
	job, err := s.cfg.ReplayJobs.StartReplayJob(js.ctx, ordersync.ReplayJob{Query: query, Actor: actor,
		Process: js.process, Started: s.cfg.Clock()})
	if errors.Is(err, ordersync.ErrConflict) {
		return job, errJobRunning
	}
	if err != nil {
		return job, err
	}
	f.IncludeReplayed, f.BeforeID, f.Limit = false, 0, 0
	done := make(chan struct{})
	js.done[job.ID] = done
	js.wg.Add(1)
	go func() {
		defer js.wg.Done()
		defer close(done)
		s.runReplayJob(job.ID, f)
	}()
	return job, nil
}

// runReplayJob reads every letter the filter selects, then replays each
// through the Replayer, the one replay path; a letter that fails is
// counted and the job goes on. A second goroutine writes the progress
// and heartbeat to the mirror every beat; the end is written last.
func (s *Console) runReplayJob(id int64, f ordersync.DeadLetterFilter) {
	js := s.jobs
	ctx, cancel := context.WithTimeout(js.ctx, jobTimeout)
	defer cancel()
	var (
		mu sync.Mutex
		p  ordersync.ReplayJobProgress
	)
	update := func(fn func(*ordersync.ReplayJobProgress)) {
		mu.Lock()
		fn(&p)
		mu.Unlock()
	}
	progress := func() ordersync.ReplayJobProgress {
		mu.Lock()
		defer mu.Unlock()
		return p
	}
	// lost is set when the mirror says the job no longer runs: another
	// process judged it interrupted, so it must not go on beside a new one.
	var lost atomic.Bool
	beat := func() {
		err := s.cfg.ReplayJobs.BeatReplayJob(ctx, id, progress(), s.cfg.Clock())
		if errors.Is(err, ordersync.ErrNotFound) {
			lost.Store(true)
			cancel()
		} else if err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("admin replay job: beat", "job", id, "err", err)
		}
	}
	beating := make(chan struct{})
	go func() {
		defer close(beating)
		tick := time.NewTicker(ordersync.ReplayJobBeat)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				beat()
			}
		}
	}()
	s.replayLetters(ctx, f, update, beat)
	state := ordersync.JobFinished
	if ctx.Err() != nil { // closing, out of time, or lost
		state = ordersync.JobStopped
	}
	cancel()
	<-beating
	if !lost.Load() {
		// Written with a context of its own: the job's may have ended it.
		endCtx, endCancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer endCancel()
		if err := s.cfg.ReplayJobs.EndReplayJob(endCtx, id, progress(), state, s.cfg.Clock()); err != nil {
			s.cfg.Logger.Error("admin replay job: end", "job", id, "err", err)
		}
	}
}

// replayLetters is the work of a job: the letters first, then each one's
// replay, reported through update; listed is called between the two.
func (s *Console) replayLetters(ctx context.Context, f ordersync.DeadLetterFilter, update func(func(*ordersync.ReplayJobProgress)), listed func()) {
	// The letters are read first, newest first in pages by id, so the job
	// replays the letters the filter matched when it started: not those a
	// replay dead-letters again meanwhile (they are newer).
	var ids []int64
	for len(ids) < maxJobLetters {
		f.Limit = min(jobPage, maxJobLetters-len(ids))
		page, err := s.cfg.DeadLetters.ListDeadLetters(ctx, f)
		if err != nil {
			update(func(p *ordersync.ReplayJobProgress) { p.LastError = fmt.Sprintf("list dead letters: %v", err) })
			return
		}
		for _, dl := range page {
			ids = append(ids, dl.ID)
		}
		update(func(p *ordersync.ReplayJobProgress) { p.Matched = len(ids) })
		if len(page) < f.Limit {
			break
		}
		f.BeforeID = page[len(page)-1].ID
	}
	if len(ids) == maxJobLetters {
		f.Limit = 1
		if more, err := s.cfg.DeadLetters.ListDeadLetters(ctx, f); err == nil && len(more) > 0 {
			update(func(p *ordersync.ReplayJobProgress) { p.More = true })
		}
	}
	listed() // how many matched, in the mirror before the first replay
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		if err := s.cfg.Replayer.ReplayDeadLetter(ctx, id); err != nil {
			update(func(p *ordersync.ReplayJobProgress) { p.Failed++; p.LastError = err.Error() })
			continue
		}
		update(func(p *ordersync.ReplayJobProgress) { p.Replayed++ })
	}
}

// WaitReplayJob waits until job id, which this process runs, has ended
// and returns its record from the mirror; false when the mirror has no
// such job. A job of another process is returned as it stands.
func (s *Console) WaitReplayJob(ctx context.Context, id int64) (ordersync.ReplayJob, bool, error) {
	s.jobs.mu.Lock()
	done := s.jobs.done[id]
	s.jobs.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return ordersync.ReplayJob{}, true, ctx.Err()
		}
	}
	job, err := s.cfg.ReplayJobs.FindReplayJob(ctx, id)
	if errors.Is(err, ordersync.ErrNotFound) {
		return job, false, nil
	}
	return job, err == nil, err
}

// Close stops the running replay job, if any (the letter in hand is given
// up unless it is on the queue already), and waits for it: it is recorded
// as stopped, and the letters it had not replayed stay dead letters,
// listed for the next one. Call it before closing what the Replayer
// publishes to.
func (s *Console) Close() {
	s.jobs.cancel()
	s.jobs.wg.Wait()
}
