package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
)

// jobRefresh is how often a running job's page reloads itself (a Refresh
// header: no script, and the page reads the same without it).
const jobRefresh = "2"

// JobView is a replay job as a page shows it, in the state it is in now.
type JobView struct {
	ordersync.ReplayJob
	State                         ordersync.ReplayJobState
	Running, Stopped, Interrupted bool
	Started, Ended, Beat          Moment
	// ListURL is the Dead letters page of the job's filter.
	ListURL string
}

func (s *Console) jobView(j ordersync.ReplayJob, loc *time.Location) JobView {
	state := j.StateAt(s.cfg.Clock())
	v := JobView{ReplayJob: j, State: state, Running: state == ordersync.JobRunning, Stopped: state == ordersync.JobStopped,
		Interrupted: state == ordersync.JobInterrupted, Started: momentOf(j.Started, loc), Ended: momentOf(j.Ended, loc),
		Beat: momentOf(j.Beat, loc), ListURL: "/console/dead-letters?" + j.Query}
	if state == ordersync.JobInterrupted && j.Ended.IsZero() {
		v.Ended = v.Beat // as the mirror records it once another job starts
	}
	return v
}

// againQuery is the Dead letters query of the letters of the events the
// job re-queued that failed again: re-queued from its start to its end.
func (v JobView) againQuery() url.Values {
	q := url.Values{"requeued_from": {v.ReplayJob.Started.UTC().Format(time.RFC3339Nano)}}
	if !v.ReplayJob.Ended.IsZero() {
		// The job's letters are marked before its end is recorded.
		q.Set("requeued_to", v.ReplayJob.Ended.UTC().Add(time.Microsecond).Format(time.RFC3339Nano))
	}
	return q
}

// consoleReplayDeadLetter replays one letter, as POST
// /v1/dead-letters/{id}/replay does, and shows the list the form was on.
func (s *Console) consoleReplayDeadLetter(w http.ResponseWriter, r *http.Request) {
	id, ok := api.DeadLetterID(w, r)
	if !ok {
		return
	}
	if err := s.cfg.Replayer.ReplayDeadLetter(r.Context(), id); err != nil {
		status, msg := s.consoleError(fmt.Sprintf("replay dead letter %d", id), err)
		s.showDeadLetters(w, r, filterOf(r), status, msg)
		return
	}
	s.showDeadLetters(w, r, filterOf(r), http.StatusOK, fmt.Sprintf("Dead letter %d replayed: it is back in the queue.", id))
}

// consoleReplayDeadLetters starts a job replaying every letter the form's
// filter matches and goes to its page.
func (s *Console) consoleReplayDeadLetters(w http.ResponseWriter, r *http.Request) {
	q, f, n, ok := s.replaySelection(w, r, filterOf(r))
	if !ok {
		return
	}
	// A bulk replay runs once confirmed with the count it will replay; a
	// count that changed since asks again.
	if r.PostFormValue("confirmed") != strconv.Itoa(n) {
		s.office.Note(r, fmt.Sprintf("not confirmed: asked to confirm %d letter(s) of %q", n, q.Encode()))
		http.Redirect(w, r, "/console/dead-letters/replay?"+q.Encode(), http.StatusSeeOther)
		return
	}
	actor := ""
	if p, ok := s.office.Principal(r); ok {
		actor = p.Name
	}
	job, err := s.startReplayJob(f, q.Encode(), actor)
	if errors.Is(err, errJobRunning) {
		s.showDeadLetters(w, r, q, http.StatusConflict,
			fmt.Sprintf("Replay job %d is still running (started by %s on %s): wait for it to end, then start another.",
				job.ID, job.Actor, job.Process))
		return
	}
	if errors.Is(err, errClosing) {
		api.WriteProblem(w, http.StatusServiceUnavailable, "this process is shutting down: start the job again on the one that takes over", nil)
		return
	}
	if err != nil {
		s.office.Fail(w, "start replay job", err, "")
		return
	}
	s.office.Note(r, fmt.Sprintf("replay job %d: dead letters %s", job.ID, q.Encode()))
	http.Redirect(w, r, fmt.Sprintf("/console/dead-letters/jobs/%d", job.ID), http.StatusSeeOther)
}

// countLetters is how many letters f matches, every reason.
func (s *Console) countLetters(ctx context.Context, f ordersync.DeadLetterFilter) (int, error) {
	counts, err := s.cfg.DeadLetters.CountDeadLetters(ctx, f)
	n := 0
	for _, c := range counts {
		n += c
	}
	return n, err
}

// DeadLettersConfirmView is the page that asks before a bulk replay.
type DeadLettersConfirmView struct {
	Filter, ListURL string
	Count           int
	MayAct          bool
}

// deadLettersConfirmPage asks to confirm the replay of every letter a
// filter matches, with their count.
func (s *Console) deadLettersConfirmPage(w http.ResponseWriter, r *http.Request) {
	q, _, n, ok := s.replaySelection(w, r, cloneValues(r.URL.Query()))
	if !ok {
		return
	}
	view := &DeadLettersConfirmView{Filter: q.Encode(), ListURL: "/console/dead-letters?" + q.Encode(), Count: n, MayAct: s.mayAct(r)}
	s.page(w, r, http.StatusOK, "deadlettersconfirm.html", &Page{Title: "Confirm the replay", Data: view})
}

func (s *Console) replayJobPage(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		api.WriteProblem(w, http.StatusNotFound, fmt.Sprintf("no replay job %q", r.PathValue("id")), nil)
		return
	}
	job, err := s.cfg.ReplayJobs.FindReplayJob(r.Context(), id)
	if err != nil {
		s.office.Fail(w, "find replay job", err, fmt.Sprintf("no replay job %d", id))
		return
	}
	zoneName := s.storeZone(r.Context(), s.cfg.Stores.Default)
	loc, mode := s.zoneOf(r, zoneName)
	jv := s.jobView(job, loc)
	if jv.Running {
		w.Header().Set("Refresh", jobRefresh)
	}
	// What the re-queued events became: the letters of those that failed
	// again since, linked.
	again, _ := api.ParseDeadLetterQuery(jv.againQuery()) // times it wrote itself
	counts, err := s.cfg.DeadLetters.CountDeadLetters(r.Context(), again)
	if err != nil {
		s.office.Fail(w, "count the letters that failed again", err, "")
		return
	}
	failedAgain := 0
	for _, n := range counts {
		failedAgain += n
	}
	view := struct {
		JobView
		Zone        ZoneSwitch
		FailedAgain int
		AgainURL    string
	}{jv, ZoneSwitch{Mode: mode, Store: zoneName, Back: r.URL.Path}, failedAgain, "/console/dead-letters?" + jv.againQuery().Encode()}
	s.page(w, r, http.StatusOK, "replayjob.html", &Page{Title: fmt.Sprintf("Replay job %d", id), Data: view})
}

// replaySelection is what a bulk replay of q's letters selects: every page
// and only what is not replayed yet, and how many letters that is. It has
// answered the request when ok is false.
func (s *Console) replaySelection(w http.ResponseWriter, r *http.Request, q url.Values) (url.Values, ordersync.DeadLetterFilter, int, bool) {
	for _, p := range []string{"before", "limit", "replayed"} {
		q.Del(p)
	}
	f, fields := api.ParseDeadLetterQuery(q)
	if fields != nil {
		view := &DeadLettersView{Query: q, Errors: fields}
		s.page(w, r, http.StatusBadRequest, "deadletters.html", &Page{Title: "Dead letters", Data: view})
		return nil, f, 0, false
	}
	n, err := s.countLetters(r.Context(), f)
	if err != nil {
		s.office.Fail(w, "count dead letters", err, "")
		return nil, f, 0, false
	}
	return q, f, n, true
}
