package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// testReplayJobs: one job runs at a time; a beat and an end record its
// progress; an ended job takes no more beats; a running job whose
// heartbeat is stale is recorded interrupted when the next one starts.
func testReplayJobs(t *testing.T, s Store) {
	ctx := context.Background()
	start := time.Date(2026, 11, 3, 8, 0, 0, 0, time.UTC)
	job, err := s.StartReplayJob(ctx, ordersync.ReplayJob{Query: "reason=rejected", Actor: "ana", Process: "host:1", Started: start})
	if err != nil || job.ID == 0 || job.State != ordersync.JobRunning || !job.Beat.Equal(start) {
		t.Fatalf("StartReplayJob = %+v, %v; want running, beating at its start", job, err)
	}
	running, err := s.StartReplayJob(ctx, ordersync.ReplayJob{Query: "x", Actor: "bo", Process: "host:2", Started: start.Add(time.Second)})
	if !errors.Is(err, ordersync.ErrConflict) || running.ID != job.ID {
		t.Errorf("a second job while one runs: %+v, %v; want the running job and ErrConflict", running, err)
	}

	beat := start.Add(ordersync.ReplayJobBeat)
	p := ordersync.ReplayJobProgress{Matched: 10, Replayed: 4, Failed: 1, More: true, LastError: "queue full"}
	if err := s.BeatReplayJob(ctx, job.ID, p, beat); err != nil {
		t.Fatalf("BeatReplayJob: %v", err)
	}
	got, err := s.FindReplayJob(ctx, job.ID)
	if err != nil || got.Query != "reason=rejected" || got.Actor != "ana" || got.Process != "host:1" || got.State != ordersync.JobRunning ||
		got.Matched != 10 || got.Replayed != 4 || got.Failed != 1 || !got.More || got.LastError != "queue full" ||
		!got.Started.Equal(start) || !got.Beat.Equal(beat) || !got.Ended.IsZero() {
		t.Errorf("after a beat: %+v, %v", got, err)
	}
	end := beat.Add(time.Second)
	if err := s.EndReplayJob(ctx, job.ID, ordersync.ReplayJobProgress{Matched: 10, Replayed: 10}, ordersync.JobRunning, end); err == nil {
		t.Error("EndReplayJob accepted running as an end")
	}
	if err := s.EndReplayJob(ctx, job.ID, ordersync.ReplayJobProgress{Matched: 10, Replayed: 10}, ordersync.JobFinished, end); err != nil {
		t.Fatalf("EndReplayJob: %v", err)
	}
	if got, err := s.FindReplayJob(ctx, job.ID); err != nil || got.State != ordersync.JobFinished || got.Replayed != 10 || got.Failed != 0 || !got.Ended.Equal(end) {
		t.Errorf("after its end: %+v, %v; want finished at %v with 10 replayed", got, err, end)
	}
	if err := s.BeatReplayJob(ctx, job.ID, p, end.Add(time.Second)); !errors.Is(err, ordersync.ErrNotFound) {
		t.Errorf("a beat after the end: %v, want ErrNotFound", err)
	}

	// A job whose process died: it stops beating, and the next start
	// records it interrupted.
	dead, err := s.StartReplayJob(ctx, ordersync.ReplayJob{Query: "all", Actor: "bo", Process: "host:2", Started: end})
	if err != nil {
		t.Fatalf("StartReplayJob after the first ended: %v", err)
	}
	next, err := s.StartReplayJob(ctx, ordersync.ReplayJob{Query: "all", Actor: "ana", Process: "host:3", Started: end.Add(ordersync.ReplayJobStale + time.Second)})
	if err != nil {
		t.Fatalf("StartReplayJob after a stale one: %v", err)
	}
	if got, err := s.FindReplayJob(ctx, dead.ID); err != nil || got.State != ordersync.JobInterrupted || !got.Ended.Equal(end) {
		t.Errorf("the stale job: %+v, %v; want interrupted, ended at its last beat %v", got, err, end)
	}
	if err := s.BeatReplayJob(ctx, dead.ID, p, next.Started); !errors.Is(err, ordersync.ErrNotFound) {
		t.Errorf("the interrupted job's late beat: %v, want ErrNotFound", err)
	}

	list, err := s.ListReplayJobs(ctx, 2)
	if err != nil || len(list) != 2 || list[0].ID != next.ID || list[1].ID != dead.ID {
		t.Errorf("ListReplayJobs(2) = %+v, %v; want the last two, newest first", list, err)
	}
	if _, err := s.FindReplayJob(ctx, 9999); !errors.Is(err, ordersync.ErrNotFound) {
		t.Errorf("FindReplayJob of an unknown id: %v, want ErrNotFound", err)
	}
}
