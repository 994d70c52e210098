package admin_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
	"github.com/ordersync/ordersync/store"
)

// TestExportSearchSaysAsOf: an export with a search (q=) matches names the
// indexer has read, so while the indexer is behind, the API's file says
// as of when in its headers and the console's Export page says it as
// Orders does; a file without a search, or once indexed, is current.
func TestExportSearchSaysAsOf(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, store.Config{URL: testdb.SQLitePath(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mirrorOrders(t, db, time.Date(2026, 10, 10, 20, 0, 0, 0, time.UTC),
		[5]string{"usd1", "PAID", "USD", "0.10", "2026-10-10T12:00:00.000Z"})
	base := consoleServer(t, db, roleTokens, func(c *admin.Config) { c.Reports, c.Exports = db, db })

	apiGet := func(path string) http.Header {
		t.Helper()
		req, err := http.NewRequest("GET", base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer eve-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		// Read to the end: the export holds one of the server's two
		// slots until its last chunk is out, and a file abandoned
		// unread may hold it past the next request, which is then
		// refused 503.
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		return resp.Header
	}
	b := newBrowser(t, base)
	b.signIn("eve-token")
	check := func(behind bool) {
		t.Helper()
		h := apiGet("/v1/exports/orders?q=usd1")
		asOf, err := time.Parse(time.RFC3339, h.Get("Ordersync-As-Of"))
		if err != nil || h.Get("Ordersync-Behind") != map[bool]string{true: "true", false: "false"}[behind] {
			t.Errorf("behind %v: the search's file says as of %q (%v), behind %q", behind, h.Get("Ordersync-As-Of"), err, h.Get("Ordersync-Behind"))
		}
		if !behind && time.Since(asOf) > time.Minute {
			t.Errorf("indexed, the file is as of %v", asOf)
		}
		if h := apiGet("/v1/exports/orders"); h.Get("Ordersync-As-Of") != "" || h.Get("Ordersync-Behind") != "" {
			t.Errorf("a file without a search says as of %q, behind %q", h.Get("Ordersync-As-Of"), h.Get("Ordersync-Behind"))
		}
		resp, page := b.do("GET", "/console/export?q=usd1", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the Export page: %d\n%s", resp.StatusCode, page)
		}
		if got := strings.Contains(page, `id="asof">Search by name, and by cancelled, finalized or reversed time, as of `); got != behind {
			t.Errorf("behind %v: the Export page says as of: %v\n%s", behind, got, page)
		}
	}
	check(true)
	if _, err := db.IndexNow(ctx); err != nil {
		t.Fatal(err)
	}
	check(false)
}
