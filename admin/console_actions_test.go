package admin_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
)

// TestConsoleActionsRefused: on every console route that acts, as the
// router lists them, a viewer with a valid session and CSRF token gets 403
// and an operator without the CSRF token gets 403; nothing happens (no
// letter replayed, the endpoint neither disabled nor re-keyed nor sent
// anything) and the viewer's refusals are in the trail under names of
// their own.
func TestConsoleActionsRefused(t *testing.T) {
	t.Parallel()
	a := newActionsEnv(t)
	ids := a.addLetters(t, 1, ordersync.ReasonUnresolved, ordersync.DefaultAccount)
	routes := actionRoutes(t, a.api, "/console/")
	if len(routes) < 8 {
		t.Fatalf("only %d console action routes: %v", len(routes), routes)
	}
	viewer, viewerCSRF := signedIn(t, a.url, "eve-token")
	ops, _ := signedIn(t, a.url, "ops-token")
	for _, pattern := range routes {
		_, path := concrete(pattern)
		path = strings.Replace(path, "/endpoints/1/", "/endpoints/"+a.endpoint.ID+"/", 1)
		form := url.Values{"csrf": {viewerCSRF}, "since": {"1h"}, "filter": {""}}
		// A person at the console is answered with a console page, headed
		// like every page: the navigation and who is signed in.
		if resp, body := viewer.do("POST", path, form); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "only operators act") ||
			!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, `id="problem"`) ||
			!strings.Contains(body, `<nav aria-label="Console">`) || !strings.Contains(body, "eve (viewer)") {
			t.Errorf("viewer %s: %d %s %s, want a 403 page", pattern, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if resp, body := ops.do("POST", path, url.Values{"since": {"1h"}}); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "CSRF token is missing") ||
			!strings.Contains(body, `<nav aria-label="Console">`) {
			t.Errorf("operator without CSRF token %s: %d %s, want a 403 page", pattern, resp.StatusCode, body)
		}
	}
	if n := a.replayCounts(t, ids); n[0] != 0 {
		t.Errorf("the letter was replayed %d times by refused requests", n[0])
	}
	ep, err := a.db.FindEndpoint(context.Background(), a.endpoint.ID)
	if err != nil || ep.Disabled || ep.Secret != a.endpoint.Secret || a.received.Load() != 0 {
		t.Errorf("the endpoint after refused requests: disabled %v, secret changed %v, %d requests received; %v",
			ep.Disabled, ep.Secret != a.endpoint.Secret, a.received.Load(), err)
	}
	trail, err := a.db.ListAudit(context.Background(), ordersync.AuditFilter{Actor: "eve", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, r := range trail.Records {
		if r.Action == "console.sign-in" {
			continue
		}
		if r.Outcome != "403" || r.Via != ordersync.ViaConsole || strings.Contains(r.Action, " ") {
			t.Errorf("viewer's refusal recorded as %+v (an action without a name of its own is named by its route)", r)
		}
		names[r.Action] = true
	}
	if len(names) != len(routes) {
		t.Errorf("%d distinct actions recorded for %d routes: %v", len(names), len(routes), names)
	}
}

var jobLocation = regexp.MustCompile(`^/console/dead-letters/jobs/(\d+)$`)

// startJob posts the bulk replay form of the Dead letters page for filter
// and returns the job's id from where the answer goes.
var confirmedCount = regexp.MustCompile(`name="confirmed" value="(\d+)"`)

// startJob confirms it first: the form's post goes to the page that asks,
// whose form carries the count it confirms.
func startJob(t *testing.T, b *browser, csrf, filter string) (int64, *http.Response) {
	t.Helper()
	resp, _ := b.do("POST", "/console/dead-letters/replay", url.Values{"csrf": {csrf}, "filter": {filter}})
	confirm := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(confirm, "/console/dead-letters/replay?") {
		t.Fatalf("an unconfirmed bulk replay: %d to %q, want the confirmation page", resp.StatusCode, confirm)
	}
	_, page := b.do("GET", confirm, nil)
	m := confirmedCount.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the confirmation page has no count to confirm:\n%s", page)
	}
	resp, body := b.do("POST", "/console/dead-letters/replay", url.Values{"csrf": {csrf}, "filter": {filter}, "confirmed": {m[1]}})
	m = jobLocation.FindStringSubmatch(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || m == nil {
		t.Logf("no job: %d %s", resp.StatusCode, body)
		return 0, resp
	}
	var id int64
	fmt.Sscan(m[1], &id)
	return id, resp
}

// TestConsoleDeadLetters: the page counts the letters per reason and
// lists what its filter selects; a letter's page shows its body; an
// operator replays one letter, which leaves the list, and then, as a
// background job, every letter a filter matches (more than one read of
// the store, and past the request that started it): exactly those,
// counted as matched, replayed and failed, the progress shown while it
// runs; one job at a time.
func TestConsoleDeadLetters(t *testing.T) {
	t.Parallel()
	a := newActionsEnv(t)
	ctx := context.Background()
	unresolved := a.addLetters(t, 3, ordersync.ReasonUnresolved, ordersync.DefaultAccount)
	other := a.addLetters(t, 1, ordersync.ReasonUnresolved, "other") // an account this process does not serve
	malformed := a.addLetters(t, 1002, ordersync.ReasonMalformed, ordersync.DefaultAccount)
	ops, csrf := signedIn(t, a.url, "ops-token")

	resp, page := ops.do("GET", "/console/dead-letters", nil)
	for _, want := range []string{`>unresolved</a> <span class="count">4</span>`, `>malformed</a> <span class="count">1002</span>`,
		`>unknown_order</a> <span class="count">0</span>`, "1006 letter(s) match", `rel="next"`} {
		if resp.StatusCode != 200 || !strings.Contains(page, want) {
			t.Errorf("dead letters page: %d, lacks %q", resp.StatusCode, want)
		}
	}
	_, page = ops.do("GET", "/console/dead-letters?limit=1000", nil)
	if rows := strings.Count(page, `class="inline replay"`); rows != 100 || len(page) > 100<<10 {
		t.Errorf("a page asked for 1,000 letters lists %d and weighs %d bytes, want 100 at most 100 KB", rows, len(page))
	}
	_, page = ops.do("GET", "/console/dead-letters?reason=unresolved", nil)
	if !strings.Contains(page, "4 letter(s) match") || strings.Contains(page, "<td>malformed</td>") ||
		!strings.Contains(page, fmt.Sprintf(`href="/console/dead-letters/%d"`, unresolved[0])) {
		t.Errorf("filtered by reason, the page lists others or misses its own:\n%s", page)
	}
	if resp, page := ops.do("GET", "/console/dead-letters?reason=bogus", nil); resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "unknown dead letter reason") {
		t.Errorf("a bad reason: %d", resp.StatusCode)
	}
	if resp, page := ops.do("GET", fmt.Sprintf("/console/dead-letters/%d", unresolved[0]), nil); resp.StatusCode != 200 ||
		!strings.Contains(page, "&#34;orderId&#34;: &#34;9000&#34;") || !strings.Contains(page, "Replay this letter") {
		t.Errorf("a letter's page: %d\n%s", resp.StatusCode, page)
	}

	// Replay one from the filtered list: it leaves the list.
	resp, page = ops.do("POST", fmt.Sprintf("/console/dead-letters/%d/replay", unresolved[0]), url.Values{"csrf": {csrf}, "filter": {"reason=unresolved"}})
	if resp.StatusCode != 200 || !strings.Contains(page, fmt.Sprintf("Dead letter %d replayed", unresolved[0])) ||
		strings.Contains(page, fmt.Sprintf(`href="/console/dead-letters/%d"`, unresolved[0])) || !strings.Contains(page, "3 letter(s) match") {
		t.Errorf("replay one: %d, want the message and the letter gone:\n%s", resp.StatusCode, page)
	}
	if got := a.replayCounts(t, unresolved); got[0] != 1 || got[1] != 0 {
		t.Errorf("replay counts after replaying %d: %v", unresolved[0], got)
	}

	// The job over the unresolved letters, held to see it run.
	a.gate.hold.Store(true)
	id, resp := startJob(t, ops, csrf, "reason=unresolved&limit=1")
	if id == 0 {
		t.Fatalf("start a job: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	jobPath := fmt.Sprintf("/console/dead-letters/jobs/%d", id)
	if _, resp2 := startJob(t, ops, csrf, "reason=malformed"); resp2.StatusCode != http.StatusConflict {
		t.Errorf("a second job while one runs: %d, want 409", resp2.StatusCode)
	}
	a.gate.release <- struct{}{} // one letter through, then the job waits at the next
	a.gate.release <- struct{}{}
	resp, page = ops.do("GET", jobPath, nil)
	if resp.Header.Get("Refresh") == "" || !strings.Contains(page, "Running") || !strings.Contains(page, `<dd id="job-matched">3</dd>`) {
		t.Errorf("a running job's page: Refresh %q\n%s", resp.Header.Get("Refresh"), page)
	}
	a.gate.hold.Store(false)
	close(a.gate.release)
	job, ok, err := a.api.WaitReplayJob(ctx, id)
	if err != nil || !ok {
		t.Fatalf("wait for job %d: %v %v", id, ok, err)
	}
	if job.Matched != 3 || job.Replayed != 2 || job.Failed != 1 || !strings.Contains(job.LastError, "other") || job.State != ordersync.JobFinished {
		t.Errorf("job %+v: want 3 matched (the limit of the page does not bound it), 2 replayed, 1 failed (account other)", job)
	}
	resp, page = ops.do("GET", jobPath, nil)
	if resp.Header.Get("Refresh") != "" || !strings.Contains(page, "Finished") || !strings.Contains(page, `<dd id="job-replayed">2</dd>`) ||
		!strings.Contains(page, `<dd id="job-failed">1</dd>`) {
		t.Errorf("a finished job's page: Refresh %q\n%s", resp.Header.Get("Refresh"), page)
	}
	// What the re-queued events became: one failed again (a letter of its
	// replay's message id), linked from the job; the letter replayed alone
	// before the job failed again too, and is not the job's.
	var added []int64
	for _, letter := range []int64{unresolved[1], unresolved[0]} {
		n, err := a.db.AddDeadLetter(ctx, ordersync.DeadLetter{MsgID: fmt.Sprintf("replay:%d:1", letter), Account: ordersync.DefaultAccount,
			Reason: ordersync.ReasonUnresolved, Attempts: 1, OrderID: "9001", Body: []byte(`{}`), CreatedAt: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		added = append(added, n)
	}
	_, page = ops.do("GET", jobPath, nil)
	again := regexp.MustCompile(`<a href="([^"]+)" id="job-again">(\d+) letter`).FindStringSubmatch(page)
	if again == nil || again[2] != "1" || !strings.Contains(page, "re-queued: sent back to the queue") {
		t.Fatalf("the finished job's page does not link 1 letter that failed again:\n%s", page)
	}
	if _, list := ops.do("GET", html.UnescapeString(again[1]), nil); !strings.Contains(list, "1 letter(s) match") {
		t.Errorf("the job's failed-again link lists:\n%s", list)
	}
	for _, n := range added { // out of the way of what follows
		if err := a.db.MarkDeadLetterReplayed(ctx, n, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.replayCounts(t, append(unresolved, other...)); fmt.Sprint(got) != "[1 1 1 0]" {
		t.Errorf("replay counts of the unresolved letters: %v, want 1 each but the other account's", got)
	}
	if got := a.replayCounts(t, malformed); !allEqual(got, 0) {
		t.Error("the job replayed letters its filter did not match")
	}

	// Every malformed letter, more than one read of the store.
	id, resp = startJob(t, ops, csrf, "reason=malformed")
	if id == 0 {
		t.Fatalf("start a job: %d", resp.StatusCode)
	}
	if job, _, err = a.api.WaitReplayJob(ctx, id); err != nil || job.Matched != 1002 || job.Replayed != 1002 || job.Failed != 0 {
		t.Errorf("job over the malformed letters: %+v, %v", job, err)
	}
	if got := a.replayCounts(t, malformed); !allEqual(got, 1) {
		t.Error("a malformed letter was not replayed once")
	}
	_, page = ops.do("GET", "/console/dead-letters", nil)
	if !strings.Contains(page, "1 letter(s) match") || !strings.Contains(page, fmt.Sprintf(`href="/console/dead-letters/jobs/%d"`, id)) {
		t.Errorf("after the jobs the page lists more than the other account's letter, or not the jobs:\n%s", page)
	}
	// Each bulk replay leaves the request that asked for its confirmation
	// and the one that confirmed it (or was refused).
	trail, err := a.db.ListAudit(ctx, ordersync.AuditFilter{Actor: "ops", Action: "dead-letters.replay"})
	var asked, done []ordersync.AuditRecord
	for _, r := range trail.Records {
		if strings.HasPrefix(r.Object, "not confirmed: ") {
			asked = append(asked, r)
		} else {
			done = append(done, r)
		}
	}
	if err != nil || len(asked) != 3 || len(done) != 3 || !strings.Contains(done[0].Object, "reason=malformed") ||
		!strings.Contains(asked[0].Object, "1002 letter(s)") {
		t.Errorf("trail of the bulk replays: %+v, %v", trail.Records, err)
	}
}

// TestConsoleEndpoints: the page shows each endpoint's success rate and
// last failure from the delivery log; a viewer sees no action form; an
// operator disables and enables (persisted), sends a test event the
// endpoint receives, replays since a time, and rotates the secret, which
// the answer shows and no page after it.
func TestConsoleEndpoints(t *testing.T) {
	t.Parallel()
	a := newActionsEnv(t)
	ctx := context.Background()
	epID := a.endpoint.ID
	var recs []ordersync.DeliveryRecord
	for i := range 4 {
		rec := ordersync.DeliveryRecord{WebhookID: fmt.Sprint("wh-", i), EndpointID: epID, Event: ordersync.HookOrderPaid,
			Account: ordersync.DefaultAccount, OrderCode: fmt.Sprint("Ord", i), Outcome: ordersync.DeliveryDelivered, Attempts: 1, Status: 200,
			At: time.Now().Add(-time.Duration(4-i) * time.Minute)}
		if i == 2 {
			rec.Outcome, rec.Status, rec.Attempts, rec.Detail = ordersync.DeliveryDeadLettered, 500, 9, "out of retries"
		}
		recs = append(recs, rec)
	}
	// Two days back: in the 7-day window alone.
	recs = append(recs, ordersync.DeliveryRecord{WebhookID: "wh-old", EndpointID: epID, Event: ordersync.HookOrderPaid,
		Account: ordersync.DefaultAccount, OrderCode: "OrdOld", Outcome: ordersync.DeliveryDeadLettered, Attempts: 9, Status: 502,
		At: time.Now().Add(-48 * time.Hour)})
	if err := a.db.RecordDeliveries(ctx, recs); err != nil {
		t.Fatal(err)
	}

	viewer, _ := signedIn(t, a.url, "eve-token")
	resp, page := viewer.do("GET", "/console/endpoints", nil)
	if resp.StatusCode != 200 || !strings.Contains(page, "75.0 %") || !strings.Contains(page, "order.paid of order Ord2: dead_lettered after 9 attempt(s), HTTP 500: out of retries") {
		t.Errorf("endpoints page: %d, want the rate and the last failure:\n%s", resp.StatusCode, page)
	}
	if strings.Contains(page, `action="/console/endpoints/`) || strings.Contains(html.UnescapeString(page), a.endpoint.Secret) {
		t.Errorf("a viewer's page has action forms or the secret:\n%s", page)
	}
	// The window is in the URL: 7 days counts the old failure too, an hour
	// what the default does here; a window the page does not offer is a 400
	// that says which there are.
	if resp, page := viewer.do("GET", "/console/endpoints?window=7d", nil); resp.StatusCode != 200 || !strings.Contains(page, "60.0 %") ||
		!strings.Contains(page, "over the last 7 days") || !strings.Contains(page, `<option value="7d" selected>`) {
		t.Errorf("endpoints page over 7 days: %d, want 60.0 %%:\n%s", resp.StatusCode, page)
	}
	if resp, page := viewer.do("GET", "/console/endpoints?window=1h", nil); resp.StatusCode != 200 || !strings.Contains(page, "75.0 %") ||
		!strings.Contains(page, "over the last hour") {
		t.Errorf("endpoints page over an hour: %d, want 75.0 %%:\n%s", resp.StatusCode, page)
	}
	for _, bad := range []string{"2h", "24", "7d%00", "-1h"} {
		resp, page := viewer.do("GET", "/console/endpoints?window="+bad, nil)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "one of 24h, 1h, 7d") {
			t.Errorf("window %q: %d, want 400 naming the windows:\n%s", bad, resp.StatusCode, page)
		}
	}

	ops, csrf := signedIn(t, a.url, "ops-token")
	form := url.Values{"csrf": {csrf}}
	// Disabling and rotating ask first: the button leads to a page that
	// says what the action does, and a post without its confirmation goes
	// there and does nothing.
	if _, page := ops.do("GET", "/console/endpoints", nil); !strings.Contains(page, `action="/console/endpoints/`+epID+`/confirm"`) ||
		strings.Contains(page, `action="/console/endpoints/`+epID+`/disable`) {
		t.Errorf("the Disable button does not lead to its confirmation:\n%s", page)
	}
	for _, action := range []string{"disable", "rotate-secret"} {
		resp, _ := ops.do("POST", "/console/endpoints/"+epID+"/"+action, form)
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/console/endpoints/"+epID+"/confirm?action="+action {
			t.Errorf("%s without confirming: %d to %q, want the confirmation page", action, resp.StatusCode, loc)
		}
		resp, page := ops.do("GET", "/console/endpoints/"+epID+"/confirm?action="+action, nil)
		if resp.StatusCode != 200 || !strings.Contains(page, `name="confirmed" value="yes"`) || !strings.Contains(page, epID+"?") {
			t.Errorf("the confirmation of %s: %d\n%s", action, resp.StatusCode, page)
		}
		if _, page := viewer.do("GET", "/console/endpoints/"+epID+"/confirm?action="+action, nil); strings.Contains(page, `method="post" action="/console/endpoints/`) {
			t.Errorf("a viewer's confirmation of %s offers the action", action)
		}
	}
	if ep, err := a.db.FindEndpoint(ctx, epID); err != nil || ep.Disabled || ep.Secret != a.endpoint.Secret {
		t.Fatalf("unconfirmed actions changed the endpoint (%v)", err)
	}
	if trail, err := a.db.ListAudit(ctx, ordersync.AuditFilter{Actor: "ops", Action: "endpoint.disable"}); err != nil || len(trail.Records) != 1 ||
		trail.Records[0].Object != "endpoint "+epID+": not confirmed, asked to confirm" {
		t.Errorf("the unconfirmed disable's trail: %+v, %v", trail.Records, err)
	}
	if resp, page := ops.do("GET", "/console/endpoints/"+epID+"/confirm?action=delete", nil); resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "disable or rotate-secret") {
		t.Errorf("an unknown action to confirm: %d", resp.StatusCode)
	}
	confirmed := url.Values{"csrf": {csrf}, "confirmed": {"yes"}}
	resp, page = ops.do("POST", "/console/endpoints/"+epID+"/disable", confirmed)
	if ep, err := a.db.FindEndpoint(ctx, epID); resp.StatusCode != 200 || err != nil || !ep.Disabled || !strings.Contains(page, ">Enable</button>") {
		t.Errorf("disable: %d, persisted %v %v", resp.StatusCode, ep != nil && ep.Disabled, err)
	}
	if resp, page := ops.do("POST", "/console/endpoints/"+epID+"/replay", url.Values{"csrf": {csrf}, "since": {"1h"}}); resp.StatusCode != http.StatusConflict || !strings.Contains(page, "disabled") {
		t.Errorf("replay to a disabled endpoint: %d, want 409 saying so", resp.StatusCode)
	}
	resp, page = ops.do("POST", "/console/endpoints/"+epID+"/enable", form)
	if ep, err := a.db.FindEndpoint(ctx, epID); resp.StatusCode != 200 || err != nil || ep.Disabled || !strings.Contains(page, ">Disable…</button>") {
		t.Errorf("enable: %d, persisted %v", resp.StatusCode, err)
	}

	if _, page := ops.do("GET", "/console/endpoints?window=7d", nil); !strings.Contains(page, `action="/console/endpoints/`+epID+`/test?window=7d"`) {
		t.Errorf("the action forms do not carry the window:\n%s", page)
	}
	resp, page = ops.do("POST", "/console/endpoints/"+epID+"/test?window=7d", form)
	if resp.StatusCode != 200 || !strings.Contains(page, "delivered, HTTP 200") || a.received.Load() != 1 || !strings.Contains(page, "over the last 7 days") {
		t.Errorf("test event: %d, %d received\n%s", resp.StatusCode, a.received.Load(), page)
	}
	resp, page = ops.do("POST", "/console/endpoints/"+epID+"/replay", url.Values{"csrf": {csrf}, "since": {"1h"}})
	if resp.StatusCode != 200 || !strings.Contains(page, "0 event(s) since") {
		t.Errorf("replay since 1h: %d\n%s", resp.StatusCode, page)
	}
	if resp, page := ops.do("POST", "/console/endpoints/"+epID+"/replay", url.Values{"csrf": {csrf}, "since": {"yesterday"}}); resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "Since:") {
		t.Errorf("replay since an unreadable time: %d", resp.StatusCode)
	}

	resp, page = ops.do("POST", "/console/endpoints/"+epID+"/rotate-secret", confirmed)
	ep, err := a.db.FindEndpoint(ctx, epID)
	if err != nil || ep.Secret == a.endpoint.Secret {
		t.Fatalf("rotate: the secret did not change (%v)", err)
	}
	if resp.StatusCode != 200 || !strings.Contains(html.UnescapeString(page), `value="`+ep.Secret+`"`) || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("rotate: %d, Cache-Control %q, want the new secret shown:\n%s", resp.StatusCode, resp.Header.Get("Cache-Control"), page)
	}
	for _, b := range []*browser{ops, viewer} {
		_, page := b.do("GET", "/console/endpoints", nil)
		if page = html.UnescapeString(page); strings.Contains(page, ep.Secret) || strings.Contains(page, a.endpoint.Secret) ||
			!strings.Contains(page, "signs too until") {
			t.Errorf("a page after the rotation shows a secret, or not the old one's grace")
		}
	}

	trail, err := a.db.ListAudit(ctx, ordersync.AuditFilter{Actor: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, r := range trail.Records {
		seen = append(seen, r.Action+" "+r.Object+" "+r.Outcome)
	}
	for _, want := range []string{"endpoint.disable endpoint " + epID + " ok", "endpoint.enable endpoint " + epID + " ok",
		"endpoint.test endpoint " + epID + " ok", "endpoint.rotate-secret endpoint " + epID + " ok", "endpoint.replay endpoint " + epID + " since"} {
		if !strings.Contains(strings.Join(seen, "\n"), want) {
			t.Errorf("trail lacks %q:\n%s", want, strings.Join(seen, "\n"))
		}
	}
}

// TestReplayJobStopsAtClose: closing the server stops a running job and
// waits for it; the letters it had not replayed are still dead letters,
// its page says it stopped, and no job starts after.
func TestReplayJobStopsAtClose(t *testing.T) {
	t.Parallel()
	a := newActionsEnv(t)
	ids := a.addLetters(t, 3, ordersync.ReasonUnresolved, ordersync.DefaultAccount)
	ops, csrf := signedIn(t, a.url, "ops-token")
	a.gate.hold.Store(true)
	id, resp := startJob(t, ops, csrf, "")
	if id == 0 {
		t.Fatalf("start a job: %d", resp.StatusCode)
	}
	a.gate.release <- struct{}{} // the newest letter goes through
	<-a.gate.entered
	<-a.gate.entered // the job holds the next
	a.api.Close()
	job, ok, err := a.api.WaitReplayJob(context.Background(), id)
	if err != nil || !ok || job.State != ordersync.JobStopped || job.Matched != 3 || job.Replayed != 1 || job.Failed != 1 {
		t.Errorf("job after Close: %+v, %v %v; want stopped: 1 replayed, the one in hand given up", job, ok, err)
	}
	if got := a.replayCounts(t, ids); fmt.Sprint(got) != "[0 0 1]" {
		t.Errorf("replay counts %v, want the newest letter alone replayed", got)
	}
	if _, page := ops.do("GET", fmt.Sprintf("/console/dead-letters/jobs/%d", id), nil); !strings.Contains(page, "Stopped before the end") {
		t.Errorf("the stopped job's page:\n%s", page)
	}
	if _, resp := startJob(t, ops, csrf, ""); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a job after Close: %d, want 503", resp.StatusCode)
	}
}

// TestReplayJobAcrossProcesses: a job is in the mirror, so the console of
// a process that did not start it shows it (progress, who started it,
// which process runs it), so does a process started after it, and no
// job starts beside it; once its process stops beating it reads as
// interrupted and the next job starts.
func TestReplayJobAcrossProcesses(t *testing.T) {
	t.Parallel()
	a := newActionsEnv(t)
	ctx := context.Background()
	a.addLetters(t, 2, ordersync.ReasonMalformed, ordersync.DefaultAccount)
	other, err := a.db.StartReplayJob(ctx, ordersync.ReplayJob{Query: "reason=unresolved", Actor: "ana", Process: "elsewhere pid 7", Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	progress := ordersync.ReplayJobProgress{Matched: 5, Replayed: 2}
	if err := a.db.BeatReplayJob(ctx, other.ID, progress, time.Now()); err != nil {
		t.Fatal(err)
	}
	jobPath := fmt.Sprintf("/console/dead-letters/jobs/%d", other.ID)
	ops, csrf := signedIn(t, a.url, "ops-token")
	if _, page := ops.do("GET", "/console/dead-letters", nil); !strings.Contains(page, fmt.Sprintf("Job %d</a>: running, 2 of 5 replayed", other.ID)) {
		t.Errorf("the Dead letters page does not list the other process's job:\n%s", page)
	}
	resp, page := ops.do("GET", jobPath, nil)
	if resp.StatusCode != 200 || resp.Header.Get("Refresh") == "" || !strings.Contains(page, "Running") ||
		!strings.Contains(page, `<dd id="job-process">elsewhere pid 7</dd>`) || !strings.Contains(page, "by ana") || !strings.Contains(page, `<dd id="job-replayed">2</dd>`) {
		t.Errorf("the other process's job page: %d\n%s", resp.StatusCode, page)
	}
	if _, resp := startJob(t, ops, csrf, "reason=malformed"); resp.StatusCode != http.StatusConflict {
		t.Errorf("a job beside another process's: %d, want 409", resp.StatusCode)
	}

	// A process started after the job (no tokens: loopback) shows it too.
	later, err := admin.New(admin.Config{Orders: a.db, DeadLetters: a.db, ReplayJobs: a.db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(later.Close)
	srv := httptest.NewServer(later)
	t.Cleanup(srv.Close)
	if _, page := newBrowser(t, srv.URL).do("GET", jobPath, nil); !strings.Contains(page, "elsewhere pid 7") || !strings.Contains(page, "Running") {
		t.Errorf("a process started later does not show the job:\n%s", page)
	}

	// Its process dies: the last beat grows stale.
	if err := a.db.BeatReplayJob(ctx, other.ID, progress, time.Now().Add(-ordersync.ReplayJobStale-time.Second)); err != nil {
		t.Fatal(err)
	}
	if resp, page := ops.do("GET", jobPath, nil); resp.Header.Get("Refresh") != "" || !strings.Contains(page, "Interrupted") {
		t.Errorf("a job whose process stopped beating: Refresh %q\n%s", resp.Header.Get("Refresh"), page)
	}
	id, resp := startJob(t, ops, csrf, "reason=malformed")
	if id == 0 {
		t.Fatalf("a job after the interrupted one: %d", resp.StatusCode)
	}
	if job, _, err := a.api.WaitReplayJob(ctx, id); err != nil || job.State != ordersync.JobFinished || job.Replayed != 2 {
		t.Errorf("the job after the interrupted one: %+v, %v", job, err)
	}
	if job, err := a.db.FindReplayJob(ctx, other.ID); err != nil || job.State != ordersync.JobInterrupted {
		t.Errorf("the interrupted job as the mirror keeps it: %+v, %v", job, err)
	}
}
