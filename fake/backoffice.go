package fake

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
)

// backOffice is what the mirror keeps for the back office and the
// receivers beside the orders: the audit trail, console sessions, delivery
// dead letters, replay jobs, receiver heartbeats and the HTTP endpoints.
// Store's lock guards it.
type backOffice struct {
	audit      []ordersync.AuditRecord
	sessions   map[string]ordersync.ConsoleSession
	letters    []*ordersync.DeliveryDeadLetter
	replayJobs []ordersync.ReplayJob
	beats      []ordersync.ReceiverBeat
	endpoints  map[string]*ordersync.Endpoint
}

// RecordAudit adds a record to the trail.
func (s *Store) RecordAudit(_ context.Context, rec ordersync.AuditRecord) error {
	if err := ordersync.ValidateAuditRecord(rec); err != nil {
		return fmt.Errorf("record audit: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec.ID = int64(len(s.back.audit)) + 1
	rec.At = dbTime(cmp.Or(rec.At, time.Now()))
	rec.Actor, rec.Action = ordersync.Clip(rec.Actor, 200), ordersync.Clip(rec.Action, 200)
	rec.Object, rec.Outcome = ordersync.Clip(rec.Object, 500), ordersync.Clip(rec.Outcome, 600)
	s.back.audit = append(s.back.audit, rec)
	return nil
}

// ListAudit returns a page of the trail, newest first.
func (s *Store) ListAudit(_ context.Context, f ordersync.AuditFilter) (ordersync.AuditPage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	limit := clampLimit(f.Limit)
	page := ordersync.AuditPage{Records: []ordersync.AuditRecord{}}
	for i := len(s.back.audit) - 1; i >= 0; i-- {
		r := s.back.audit[i]
		switch {
		case f.Actor != "" && !strings.EqualFold(r.Actor, f.Actor),
			f.Action != "" && r.Action != strings.ToLower(f.Action),
			!f.Since.IsZero() && r.At.Before(dbTime(f.Since)),
			!f.Until.IsZero() && !r.At.Before(dbTime(f.Until)),
			f.Before > 0 && r.ID >= f.Before:
			continue
		}
		if len(page.Records) == limit {
			page.Next = page.Records[limit-1].ID
			break
		}
		page.Records = append(page.Records, r)
	}
	return page, nil
}

// CreateConsoleSession keeps a signed-in browser's session.
func (s *Store) CreateConsoleSession(_ context.Context, cs ordersync.ConsoleSession) error {
	if cs.ID == "" || cs.TokenIdentity == "" {
		return fmt.Errorf("create console session: the ID and TokenIdentity are required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.back.sessions[cs.ID]; ok {
		return fmt.Errorf("create console session: %w", ordersync.ErrConflict)
	}
	if s.back.sessions == nil {
		s.back.sessions = map[string]ordersync.ConsoleSession{}
	}
	cs.CreatedAt, cs.ExpiresAt = dbTime(cs.CreatedAt), dbTime(cs.ExpiresAt)
	s.back.sessions[cs.ID] = cs
	return nil
}

// FindConsoleSession returns the session id names unless it expired at now.
func (s *Store) FindConsoleSession(_ context.Context, id string, now time.Time) (ordersync.ConsoleSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, ok := s.back.sessions[id]
	if !ok || !cs.ExpiresAt.After(dbTime(now)) {
		return ordersync.ConsoleSession{}, fmt.Errorf("find console session: %w", ordersync.ErrNotFound)
	}
	return cs, nil
}

// DeleteConsoleSession forgets a session; forgetting one not kept is no
// error.
func (s *Store) DeleteConsoleSession(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.back.sessions, id)
	return nil
}

// AddDeliveryDeadLetter records an event an endpoint refused; a letter of
// the same delivery not yet replayed is updated, keeping its id.
func (s *Store) AddDeliveryDeadLetter(_ context.Context, dl ordersync.DeliveryDeadLetter) (int64, error) {
	op := fmt.Sprintf("add delivery dead letter %s for endpoint %s", dl.WebhookID, dl.EndpointID)
	if err := ordersync.ValidateDeliveryDeadLetter(dl); err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	dl = dl.Bounded()
	if dl.Body == nil {
		dl.Body = []byte{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, old := range s.back.letters {
		if old.EndpointID == dl.EndpointID && old.WebhookID == dl.WebhookID && old.ReplayedAt == nil {
			old.Attempts, old.LastStatus, old.LastBody, old.LastError = dl.Attempts, dl.LastStatus, dl.LastBody, dl.LastError
			old.Body = slices.Clone(dl.Body)
			return old.ID, nil
		}
	}
	dl.ID = int64(len(s.back.letters)) + 1
	dl.CreatedAt = dbTime(cmp.Or(dl.CreatedAt, time.Now()))
	dl.Body = slices.Clone(dl.Body)
	dl.ReplayedAt, dl.ReplayCount = nil, 0
	s.back.letters = append(s.back.letters, &dl)
	return dl.ID, nil
}

// ListDeliveryDeadLetters returns the letters f selects, newest first.
func (s *Store) ListDeliveryDeadLetters(_ context.Context, f ordersync.DeliveryDeadLetterFilter) ([]*ordersync.DeliveryDeadLetter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []*ordersync.DeliveryDeadLetter{}
	for i := len(s.back.letters) - 1; i >= 0 && len(out) < clampLimit(f.Limit); i-- {
		dl := s.back.letters[i]
		if (f.EndpointID != "" && dl.EndpointID != f.EndpointID) || (!f.IncludeReplayed && dl.ReplayedAt != nil) {
			continue
		}
		out = append(out, copyLetter(dl))
	}
	return out, nil
}

func copyLetter(dl *ordersync.DeliveryDeadLetter) *ordersync.DeliveryDeadLetter {
	c := *dl
	c.Body = slices.Clone(dl.Body)
	if dl.ReplayedAt != nil {
		at := *dl.ReplayedAt
		c.ReplayedAt = &at
	}
	return &c
}

// FindDeliveryDeadLetter returns the letter id names.
func (s *Store) FindDeliveryDeadLetter(_ context.Context, id int64) (*ordersync.DeliveryDeadLetter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id < 1 || id > int64(len(s.back.letters)) {
		return nil, fmt.Errorf("find delivery dead letter %d: %w", id, ordersync.ErrNotFound)
	}
	return copyLetter(s.back.letters[id-1]), nil
}

// MarkDeliveryDeadLetterReplayed records that a letter was sent again.
func (s *Store) MarkDeliveryDeadLetterReplayed(_ context.Context, id int64, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id < 1 || id > int64(len(s.back.letters)) {
		return fmt.Errorf("mark delivery dead letter %d replayed: %w", id, ordersync.ErrNotFound)
	}
	dl := s.back.letters[id-1]
	at = dbTime(at)
	dl.ReplayedAt = &at
	dl.ReplayCount++
	return nil
}

// PendingDeliveryDeadLetters counts the letters not replayed per endpoint.
func (s *Store) PendingDeliveryDeadLetters(context.Context) (map[string]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, dl := range s.back.letters {
		if dl.ReplayedAt == nil {
			out[dl.EndpointID]++
		}
	}
	return out, nil
}

// StartReplayJob records job as running, first recording the running jobs
// whose heartbeat is stale as interrupted; one job runs at a time.
func (s *Store) StartReplayJob(_ context.Context, job ordersync.ReplayJob) (ordersync.ReplayJob, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stale := dbTime(job.Started.Add(-ordersync.ReplayJobStale))
	for i := range s.back.replayJobs {
		j := &s.back.replayJobs[i]
		if j.State == ordersync.JobRunning && j.Beat.Before(stale) {
			j.State, j.Ended = ordersync.JobInterrupted, j.Beat
		}
	}
	for _, j := range s.back.replayJobs {
		if j.State == ordersync.JobRunning {
			return j, fmt.Errorf("start replay job: job %d is running: %w", j.ID, ordersync.ErrConflict)
		}
	}
	job.ID = int64(len(s.back.replayJobs)) + 1
	job.State, job.Ended = ordersync.JobRunning, time.Time{}
	job.Started = dbTime(job.Started)
	job.Beat = job.Started
	job.Matched, job.Replayed, job.Failed, job.More, job.LastError = 0, 0, 0, false, ""
	s.back.replayJobs = append(s.back.replayJobs, job)
	return job, nil
}

// BeatReplayJob records a running job's progress and heartbeat.
func (s *Store) BeatReplayJob(_ context.Context, id int64, p ordersync.ReplayJobProgress, at time.Time) error {
	return s.updateReplayJob(fmt.Sprintf("beat replay job %d", id), id, p, ordersync.JobRunning, at)
}

// EndReplayJob records how a running job ended.
func (s *Store) EndReplayJob(_ context.Context, id int64, p ordersync.ReplayJobProgress, state ordersync.ReplayJobState, at time.Time) error {
	if state == ordersync.JobRunning {
		return fmt.Errorf("end replay job %d: %q is no end", id, state)
	}
	return s.updateReplayJob(fmt.Sprintf("end replay job %d", id), id, p, state, at)
}

func (s *Store) updateReplayJob(op string, id int64, p ordersync.ReplayJobProgress, state ordersync.ReplayJobState, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id < 1 || id > int64(len(s.back.replayJobs)) || s.back.replayJobs[id-1].State != ordersync.JobRunning {
		return fmt.Errorf("%s: no running job %d: %w", op, id, ordersync.ErrNotFound)
	}
	j := &s.back.replayJobs[id-1]
	j.Matched, j.Replayed, j.Failed, j.More, j.LastError = p.Matched, p.Replayed, p.Failed, p.More, p.LastError
	j.State, j.Beat = state, dbTime(at)
	if state != ordersync.JobRunning {
		j.Ended = j.Beat
	}
	return nil
}

// FindReplayJob returns the job id names.
func (s *Store) FindReplayJob(_ context.Context, id int64) (ordersync.ReplayJob, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id < 1 || id > int64(len(s.back.replayJobs)) {
		return ordersync.ReplayJob{}, fmt.Errorf("find replay job %d: %w", id, ordersync.ErrNotFound)
	}
	return s.back.replayJobs[id-1], nil
}

// ListReplayJobs returns the latest limit jobs, newest first.
func (s *Store) ListReplayJobs(_ context.Context, limit int) ([]ordersync.ReplayJob, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []ordersync.ReplayJob{}
	for i := len(s.back.replayJobs) - 1; i >= 0 && len(out) < limit; i-- {
		out = append(out, s.back.replayJobs[i])
	}
	return out, nil
}

// RecordReceiverBeats writes a receiver's beats, one per account; a beat
// keeps the start its receiver first recorded.
func (s *Store) RecordReceiverBeats(_ context.Context, beats []ordersync.ReceiverBeat) error {
	s.mu.Lock()
	defer s.mu.Unlock()
next:
	for _, b := range beats {
		b.StartedAt, b.BeatAt = dbTime(b.StartedAt), dbTime(b.BeatAt)
		for i, old := range s.back.beats {
			if old.ReceiverID == b.ReceiverID && old.Account == b.Account {
				b.StartedAt = old.StartedAt
				s.back.beats[i] = b
				continue next
			}
		}
		s.back.beats = append(s.back.beats, b)
	}
	return nil
}

// ListReceiverBeats returns account's beats at or after since, oldest
// start first.
func (s *Store) ListReceiverBeats(_ context.Context, account string, since time.Time) ([]ordersync.ReceiverBeat, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ordersync.ReceiverBeat
	for _, b := range s.back.beats {
		if b.Account == account && !b.BeatAt.Before(dbTime(since)) {
			out = append(out, b)
		}
	}
	slices.SortStableFunc(out, func(a, b ordersync.ReceiverBeat) int { return a.StartedAt.Compare(b.StartedAt) })
	return out, nil
}

// PruneReceiverBeats deletes the beats older than before.
func (s *Store) PruneReceiverBeats(_ context.Context, before time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.back.beats)
	s.back.beats = slices.DeleteFunc(s.back.beats, func(b ordersync.ReceiverBeat) bool { return b.BeatAt.Before(dbTime(before)) })
	return n - len(s.back.beats), nil
}
