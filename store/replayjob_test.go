package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// TestReplayJobs: one job runs at a time, across processes (two started
// at once: one wins); its beats carry its progress; a job whose heartbeat
// is stale reads as interrupted, and starting the next records it so
// (ended at its last beat) and refuses its late beats; an end is written
// once; the list is newest first.
func TestReplayJobs(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

		// Two processes start a job at once: one runs, the other is told which.
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			won  []ordersync.ReplayJob
			lost []ordersync.ReplayJob
		)
		for _, p := range []string{"host-a pid 1", "host-b pid 2"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				j, err := db.StartReplayJob(ctx, ordersync.ReplayJob{Query: "reason=malformed", Actor: "ops", Process: p, Started: t0})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won = append(won, j)
				case errors.Is(err, ordersync.ErrConflict):
					lost = append(lost, j)
				default:
					t.Errorf("start: %v", err)
				}
			}()
		}
		wg.Wait()
		if len(won) != 1 || len(lost) != 1 || lost[0].ID != won[0].ID || lost[0].State != ordersync.JobRunning {
			t.Fatalf("two starts at once: won %+v, refused with %+v; want one running job, and the other told of it", won, lost)
		}
		a := won[0]

		p := ordersync.ReplayJobProgress{Matched: 30, Replayed: 12, Failed: 1, More: true, LastError: "publish: timeout"}
		if err := db.BeatReplayJob(ctx, a.ID, p, t0.Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
		got, err := db.FindReplayJob(ctx, a.ID)
		if err != nil || got.Matched != 30 || got.Replayed != 12 || got.Failed != 1 || !got.More || got.LastError != "publish: timeout" ||
			got.Actor != "ops" || got.Query != "reason=malformed" || got.Process != a.Process || !got.Beat.Equal(t0.Add(10*time.Second)) {
			t.Fatalf("after a beat: %+v, %v", got, err)
		}
		if s := got.StateAt(t0.Add(10*time.Second + ordersync.ReplayJobStale)); s != ordersync.JobRunning {
			t.Errorf("a job whose heartbeat is just within the limit reads %s", s)
		}
		stale := t0.Add(10*time.Second + ordersync.ReplayJobStale + time.Second)
		if s := got.StateAt(stale); s != ordersync.JobInterrupted {
			t.Errorf("a job whose heartbeat is stale reads %s, want interrupted", s)
		}
		if _, err := db.StartReplayJob(ctx, ordersync.ReplayJob{Actor: "ops", Started: t0.Add(20 * time.Second)}); !errors.Is(err, ordersync.ErrConflict) {
			t.Errorf("a start while the job beats: %v, want ErrConflict", err)
		}

		// Its process died: the next start records it interrupted.
		b, err := db.StartReplayJob(ctx, ordersync.ReplayJob{Query: "", Actor: "ana", Process: "host-c pid 3", Started: stale})
		if err != nil {
			t.Fatalf("start after the running job went stale: %v", err)
		}
		got, err = db.FindReplayJob(ctx, a.ID)
		if err != nil || got.State != ordersync.JobInterrupted || !got.Ended.Equal(t0.Add(10*time.Second)) || got.Replayed != 12 {
			t.Errorf("the stale job: %+v, %v; want interrupted, ended at its last beat, its progress kept", got, err)
		}
		if err := db.BeatReplayJob(ctx, a.ID, p, stale); !errors.Is(err, ordersync.ErrNotFound) {
			t.Errorf("a late beat of the interrupted job: %v, want ErrNotFound", err)
		}

		end := ordersync.ReplayJobProgress{Matched: 2, Replayed: 2}
		if err := db.EndReplayJob(ctx, b.ID, end, ordersync.JobRunning, stale); err == nil {
			t.Error("an end as running was accepted")
		}
		if err := db.EndReplayJob(ctx, b.ID, end, ordersync.JobFinished, stale.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := db.EndReplayJob(ctx, b.ID, end, ordersync.JobStopped, stale.Add(2*time.Second)); !errors.Is(err, ordersync.ErrNotFound) {
			t.Errorf("a second end: %v, want ErrNotFound", err)
		}
		list, err := db.ListReplayJobs(ctx, 10)
		if err != nil || len(list) != 2 || list[0].ID != b.ID || list[0].State != ordersync.JobFinished || list[0].Replayed != 2 ||
			!list[0].Ended.Equal(stale.Add(time.Second)) || list[1].ID != a.ID {
			t.Errorf("list: %+v, %v", list, err)
		}
		if _, err := db.FindReplayJob(ctx, 999); !errors.Is(err, ordersync.ErrNotFound) {
			t.Errorf("find an unknown job: %v", err)
		}
		// None runs: the next starts at once.
		if _, err := db.StartReplayJob(ctx, ordersync.ReplayJob{Actor: "ops", Started: stale.Add(3 * time.Second)}); err != nil {
			t.Errorf("a start with none running: %v", err)
		}
	})
}

// TestPruneReplayJobs: jobs that ended before the cutoff go, oldest first
// and at most limit at a time, and so does a job still marked running whose
// last heartbeat is that old (its process died); a job that ended later, or
// runs with a fresh heartbeat, stays.
func TestPruneReplayJobs(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := openDB(t, url)
		t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
		start := func(at time.Time) int64 {
			t.Helper()
			j, err := db.StartReplayJob(ctx, ordersync.ReplayJob{Query: "reason=malformed", Actor: "ops", Process: "p", Started: at})
			if err != nil {
				t.Fatal(err)
			}
			return j.ID
		}
		end := func(id int64, at time.Time) {
			t.Helper()
			if err := db.EndReplayJob(ctx, id, ordersync.ReplayJobProgress{}, ordersync.JobFinished, at); err != nil {
				t.Fatal(err)
			}
		}
		old1 := start(t0.Add(-50 * time.Hour))
		end(old1, t0.Add(-49*time.Hour))
		old2 := start(t0.Add(-48 * time.Hour))
		end(old2, t0.Add(-47*time.Hour))
		recent := start(t0.Add(-2 * time.Hour))
		end(recent, t0.Add(-time.Hour))
		dead := start(t0.Add(-30 * time.Hour)) // never beats again
		cutoff := t0.Add(-24 * time.Hour)

		if n, err := db.PruneReplayJobs(ctx, cutoff, 2); err != nil || n != 2 {
			t.Fatalf("PruneReplayJobs(limit 2) = %d, %v; want 2", n, err)
		}
		if _, err := db.FindReplayJob(ctx, old1); !errors.Is(err, ordersync.ErrNotFound) {
			t.Errorf("the oldest job after the first prune: %v; want it gone", err)
		}
		if n, err := db.PruneReplayJobs(ctx, cutoff, 10); err != nil || n != 1 {
			t.Fatalf("PruneReplayJobs = %d, %v; want the 1 left before the cutoff", n, err)
		}
		if _, err := db.FindReplayJob(ctx, dead); !errors.Is(err, ordersync.ErrNotFound) {
			t.Errorf("the job whose process died: %v; want it gone", err)
		}
		jobs, err := db.ListReplayJobs(ctx, 10)
		if err != nil || len(jobs) != 1 || jobs[0].ID != recent {
			t.Fatalf("jobs left: %+v, %v; want the recent one only", jobs, err)
		}

		live := start(t0)
		if err := db.BeatReplayJob(ctx, live, ordersync.ReplayJobProgress{}, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if n, err := db.PruneReplayJobs(ctx, t0, 10); err != nil || n != 1 {
			t.Fatalf("PruneReplayJobs(now) = %d, %v; want the recent one only, not the running one", n, err)
		}
		if _, err := db.FindReplayJob(ctx, live); err != nil {
			t.Errorf("the running job: %v", err)
		}
	})
}
