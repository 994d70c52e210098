package admin_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// auditRow reads a row: 1 when, 2 who, 3 what in words, 4 the action,
// 5 the object's link, 6 the object, 7 the outcome.
var auditRow = regexp.MustCompile(`<tr><td[^>]*><time [^>]*>([^<]*)</time></td><td[^>]*>([^<]*)</td><td[^>]*>[^<]*</td><td[^>]*>[^<]*</td><td[^>]*>([^<]*) <span class="hint">\(([^<)]*)\)</span></td><td[^>]*>(?:<a href="([^"]*)">)?([^<]*)(?:</a>)?</td><td[^>]*>([^<]*)</td></tr>`)

// TestConsoleAudit: a viewer reads the trail newest first, filtered by who
// and what as the URL says, page after page, times in the store's zone or
// UTC as the switch says.
func TestConsoleAudit(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	at := time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)
	for i := range 55 {
		rec := ordersync.AuditRecord{At: at.Add(time.Duration(i) * time.Minute), Actor: "ops", Role: ordersync.RoleOperator,
			Via: ordersync.ViaAPI, Action: "dead-letter.replay", Object: fmt.Sprint("dead-letter ", i+1), Outcome: ordersync.OutcomeOK}
		if i%5 == 0 {
			rec.Actor, rec.Via, rec.Action, rec.Object = "alice", ordersync.ViaCLI, "order.track", fmt.Sprint("order o", i)
		}
		if err := db.RecordAudit(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	base := consoleServer(t, db, roleTokens, nil)
	b := newBrowser(t, base)
	b.signIn("eve-token")

	resp, page := b.do("GET", "/console/audit", nil)
	rows := auditRow.FindAllStringSubmatch(page, -1)
	if resp.StatusCode != http.StatusOK || len(rows) != 50 || rows[0][2] != "eve" || rows[0][4] != "console.sign-in" || rows[0][3] != "Sign in to the console" || len(page) > 100<<10 {
		t.Fatalf("the trail: %d, %d rows, first %v", resp.StatusCode, len(rows), rows[0])
	}

	// Who and what in any case.
	_, page = b.do("GET", "/console/audit?actor=Alice&action=ORDER.TRACK", nil)
	rows = auditRow.FindAllStringSubmatch(page, -1)
	if len(rows) != 11 || strings.Contains(page, `rel="next"`) {
		t.Fatalf("alice's tracks: %d rows, want 11 on one page", len(rows))
	}
	for _, r := range rows {
		if r[2] != "alice" || r[4] != "order.track" || r[3] != "Re-sync (track) an order" || r[5] != "/console/orders/"+strings.TrimPrefix(r[6], "order ")+"?account=default" {
			t.Errorf("filtered row %v", r[1:])
		}
	}
	if rows[0][6] != "order o50" || rows[0][1] != "2026-10-10 06:50 UTC−06:00" && rows[0][1] != "2026-10-10 12:50 UTC" {
		t.Errorf("newest of alice's: %v", rows[0][1:])
	}

	// ops's replays: 44, a page of 50 at most, so one page; by action alone, the same.
	_, page = b.do("GET", "/console/audit?action=dead-letter.replay", nil)
	if rows = auditRow.FindAllStringSubmatch(page, -1); len(rows) != 44 || rows[0][5] != "/console/dead-letters/55" || rows[0][6] != "dead-letter 55" {
		t.Errorf("replays: %d rows, want 44, the newest linked to its letter: %v", len(rows), rows[0][1:])
	}

	// Pages: 56 records (the sign-in too), 50 then 6, following the link.
	_, page = b.do("GET", "/console/audit", nil)
	m := regexp.MustCompile(`href="(/console/audit\?cursor=[^"]+)" rel="next"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no next page")
	}
	_, page = b.do("GET", html.UnescapeString(m[1]), nil)
	rows = auditRow.FindAllStringSubmatch(page, -1)
	if len(rows) != 6 || rows[5][6] != "order o0" || strings.Contains(page, `rel="next"`) {
		t.Errorf("second page: %d rows %v", len(rows), rows)
	}
	if resp, _ := b.do("GET", "/console/audit?cursor=x", nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad cursor: %d", resp.StatusCode)
	}

	// Times in UTC once switched.
	b.do("GET", "/console/zone?zone=utc&back=/console/audit", nil)
	_, page = b.do("GET", "/console/audit?actor=alice", nil)
	if rows = auditRow.FindAllStringSubmatch(page, -1); len(rows) == 0 || rows[0][1] != "2026-10-10 12:50 UTC" {
		t.Errorf("in UTC: %v", rows)
	}
}
