package admin_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/export"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
	"github.com/ordersync/ordersync/store"
)

// hookedExporter is the real mirror with hooks where an export reads: it
// can hold each export before its first read, fail one batch, run a hook
// after each batch reached the client, and it reports how each export
// ended.
type hookedExporter struct {
	*store.DB
	started chan struct{} // an export began, when not nil
	release chan struct{} // exports wait for it before reading, when not nil
	// failAt, when > 0, makes that batch a read error instead.
	failAt     int
	afterBatch func(ctx context.Context, n int)
	batches    atomic.Int64
	ended      chan error
}

var errInjected = errors.New("injected read error")

func (h *hookedExporter) ExportOrders(ctx context.Context, params ordersync.ExportParams, fn func([]ordersync.ExportedOrder) error) error {
	if h.started != nil {
		h.started <- struct{}{}
	}
	if h.release != nil {
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	n := 0
	err := h.DB.ExportOrders(ctx, params, func(b []ordersync.ExportedOrder) error {
		n++
		if n == h.failAt {
			return errInjected
		}
		h.batches.Add(1)
		if err := fn(b); err != nil {
			return err
		}
		if h.afterBatch != nil {
			h.afterBatch(ctx, n)
		}
		return nil
	})
	if h.ended != nil {
		h.ended <- err
	}
	return err
}

// exportEnv is the admin API over a SQLite mirror of n paid orders, read
// two orders a batch, its log in logs, each audit record it writes also
// sent to audited.
type exportEnv struct {
	url     string
	srv     *httptest.Server
	hook    *hookedExporter
	logs    *testenv.Buffer
	audited chan ordersync.AuditRecord
}

// hookedAudit is the mirror's audit trail, telling each record it wrote.
type hookedAudit struct {
	*store.DB
	recorded chan ordersync.AuditRecord
}

func (h hookedAudit) RecordAudit(ctx context.Context, rec ordersync.AuditRecord) error {
	err := h.DB.RecordAudit(ctx, rec)
	if err == nil {
		h.recorded <- rec
	}
	return err
}

// nextAudit is the next audit record the server wrote.
func (e *exportEnv) nextAudit(t *testing.T) ordersync.AuditRecord {
	t.Helper()
	select {
	case rec := <-e.audited:
		return rec
	case <-time.After(10 * time.Second):
		t.Fatal("no audit record written")
		return ordersync.AuditRecord{}
	}
}

func newExportEnv(t *testing.T, n int, configure func(*admin.Config, *http.Server)) *exportEnv {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, store.Config{URL: testdb.SQLitePath(t), IndexAfterApply: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var params []ordersync.ApplyParams
	for i := range n {
		doc := fmt.Sprintf(`{"orderId":%d,"orderCode":"o%03d","orderReference":"=1+1","name":"Pedido","orderStatus":"PAID",
"lineItems":[{"productId":1,"sku":"S","name":"Combo","price":6.5,"quantity":2,"subTotal":13},{"productId":2,"sku":"T","name":"Soda","price":0.1,"quantity":1,"subTotal":0.1}],
"subtotal":13.1,"totalDetails":{"shippingAmount":0,"discountAmount":0,"surchargeAmount":0},"total":13.1,
"store":{"currencyCode":"USD","timezone":"America/El_Salvador"},
"payment":{"authorizationCode":"-204981","buyer":{"name":"José Peña","phone":"+50370000000","email":"@jose@example.com"}},
"created":"2026-10-10T%02d:00:00.000Z"}`, 1000+i, i, i%24)
		o, err := ordersync.DecodeOrder([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		params = append(params, ordersync.ApplyParams{Account: ordersync.DefaultAccount, Order: o, Seq: int64(i + 1),
			FetchedAt: time.Date(2026, 10, 10, 23, 0, 0, 0, time.UTC), Cause: ordersync.CauseWebhook})
	}
	if _, err := db.ApplyOrders(ctx, params); err != nil {
		t.Fatal(err)
	}
	e := &exportEnv{hook: &hookedExporter{DB: db, ended: make(chan error, 8)}, logs: &testenv.Buffer{}, audited: make(chan ordersync.AuditRecord, 16)}
	cfg := admin.Config{Orders: db, Exports: e.hook, ExportBatchSize: 2, Audit: hookedAudit{DB: db, recorded: e.audited},
		Logger: slog.New(slog.NewJSONHandler(e.logs, nil))}
	srv := httptest.NewUnstartedServer(nil)
	if configure != nil {
		configure(&cfg, srv.Config)
	}
	server, err := admin.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = server
	srv.Start()
	t.Cleanup(srv.Close)
	e.url, e.srv = srv.URL, srv
	return e
}

func (e *exportEnv) get(t *testing.T, path string) (*http.Response, []byte, error) {
	t.Helper()
	resp, err := http.Get(e.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func TestExportEndpoints(t *testing.T) {
	t.Parallel()
	e := newExportEnv(t, 5, nil)
	resp, b, err := e.get(t, "/v1/exports/orders")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("export: %v %d %s", err, resp.StatusCode, b)
	}
	if got := resp.Header.Get("Ordersync-Time-Zone"); got != "America/El_Salvador" {
		t.Errorf("time zone header %q, want the store's", got)
	}
	if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, `attachment; filename=ordersync-default-orders-`) || !strings.HasSuffix(cd, ".csv") {
		t.Errorf("Content-Disposition %q", cd)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
		t.Errorf("Content-Type %q", ct)
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatalf("%v:\n%s", err, b)
	}
	if !slices.Equal(recs[0], export.Columns(export.Orders)) || len(recs) != 6 {
		t.Fatalf("header %v and %d rows", recs[0], len(recs)-1)
	}
	col := func(rec []string, name string) string { return rec[slices.Index(recs[0], name)] }
	// Newest first; the default profile keeps every value as mirrored.
	first := recs[1]
	for name, want := range map[string]string{"order_code": "o004", "total": "13.10", "buyer_phone": "+50370000000",
		"order_reference": "=1+1", "authorization_code": "-204981", "buyer_email": "@jose@example.com",
		"created_at": "2026-10-09T22:00:00-06:00", "created_at_utc": "2026-10-10T04:00:00Z",
		// Learned paid by the fetch at 23:00 UTC: no webhook announced it.
		"paid_at": "2026-10-10T17:00:00-06:00", "paid_at_utc": "2026-10-10T23:00:00Z",
		"status_changed_at": "2026-10-10T17:00:00-06:00", "status_changed_at_utc": "2026-10-10T23:00:00Z"} {
		if got := col(first, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}

	// tz, the Excel profile, ';' and the decimal comma.
	resp, b, err = e.get(t, "/v1/exports/orders?tz=Europe/Madrid&profile=excel&delimiter=;&decimal=comma&status=paid")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("excel export: %v %d %s", err, resp.StatusCode, b)
	}
	if resp.Header.Get("Ordersync-Time-Zone") != "Europe/Madrid" || !bytes.HasPrefix(b, []byte("\uFEFF")) {
		t.Errorf("excel export: zone %q, starts %q", resp.Header.Get("Ordersync-Time-Zone"), b[:3])
	}
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(b, []byte("\uFEFF"))))
	r.Comma = ';'
	if recs, err = r.ReadAll(); err != nil {
		t.Fatal(err)
	}
	// Times as a spreadsheet reads them, the header naming their zone.
	excelCol := func(rec []string, name string) string {
		i := slices.IndexFunc(recs[0], func(h string) bool { return h == name || strings.HasPrefix(h, name+" (") })
		if i < 0 {
			t.Fatalf("no column %s in %q", name, recs[0])
		}
		return rec[i]
	}
	if h := recs[0][slices.IndexFunc(recs[0], func(h string) bool { return strings.HasPrefix(h, "created_at (") })]; !strings.HasPrefix(h, "created_at (Europe/Madrid, UTC+0") {
		t.Errorf("excel created_at header %q", h)
	}
	for name, want := range map[string]string{"total": "13,10", "buyer_phone": "'+50370000000", "order_reference": "'=1+1",
		"authorization_code": "'-204981", "buyer_email": "'@jose@example.com", "created_at": "2026-10-10 06:00:00",
		"created_at_utc": "2026-10-10 04:00:00"} {
		if got := excelCol(recs[1], name); got != want {
			t.Errorf("excel %s = %q, want %q", name, got, want)
		}
	}

	// Line items, status changes, JSON Lines.
	for _, tc := range []struct {
		path  string
		lines int
	}{
		{"/v1/exports/order-lines", 1 + 10},
		{"/v1/exports/status-changes", 1 + 5},
		{"/v1/exports/orders?format=jsonl", 5},
		{"/v1/exports/order-lines?format=jsonl&status=PENDING", 0},
		{"/v1/exports/orders?status=pending", 1},
	} {
		resp, b, err := e.get(t, tc.path)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v %d %s", tc.path, err, resp.StatusCode, b)
		}
		if n := bytes.Count(b, []byte("\n")); n != tc.lines {
			t.Errorf("%s: %d lines, want %d:\n%s", tc.path, n, tc.lines, b)
		}
	}
	resp, b, _ = e.get(t, "/v1/exports/orders?format=jsonl")
	var obj map[string]string
	if err := json.Unmarshal(b[:bytes.IndexByte(b, '\n')], &obj); err != nil || obj["order_code"] != "o004" || obj["total"] != "13.10" || len(obj) != len(export.Columns(export.Orders)) {
		t.Errorf("first JSON line: %v %v", obj, err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/jsonl") {
		t.Errorf("JSON Lines Content-Type %q", ct)
	}

	// Each export is in the audit trail, as the request's principal.
	want := []string{"export.orders", "export.orders", "export.order-lines", "export.status-changes", "export.orders",
		"export.order-lines", "export.orders", "export.orders"}
	for i, action := range want {
		rec := e.nextAudit(t)
		if rec.Action != action || rec.Actor != ordersync.Loopback.Name || rec.Outcome != ordersync.OutcomeOK || !strings.HasPrefix(rec.Object, "account=default") {
			t.Errorf("audit record %d: %+v, want %s by %s", i, rec, action, ordersync.Loopback.Name)
		}
	}
	if n := strings.Count(e.logs.String(), `"actor":"`+ordersync.Loopback.Name+`"`); n != 8 {
		t.Errorf("%d exports logged with their actor, want 8:\n%s", n, e.logs)
	}
}

func TestExportBadInput(t *testing.T) {
	t.Parallel()
	e := newExportEnv(t, 1, nil)
	for path, field := range map[string]string{
		"/v1/exports/orders?format=xlsx":                     "format",
		"/v1/exports/orders?tz=Mars/Olympus_Mons":            "tz",
		"/v1/exports/orders?tz=Local":                        "tz",
		"/v1/exports/orders?status=SHIPPED":                  "status",
		"/v1/exports/orders?since=yesterday":                 "since",
		"/v1/exports/orders?profile=lotus":                   "profile",
		"/v1/exports/orders?delimiter=%7C":                   "delimiter",
		"/v1/exports/orders?decimal=dot":                     "decimal",
		"/v1/exports/order-lines?format=jsonl&profile=excel": "profile",
	} {
		resp, b, _ := e.get(t, path)
		var p api.Problem
		_ = json.Unmarshal(b, &p)
		if resp.StatusCode != http.StatusBadRequest || len(p.Errors[field]) == 0 {
			t.Errorf("%s: %d %s, want 400 naming %s", path, resp.StatusCode, b, field)
		}
	}
	if resp, _, _ := e.get(t, "/v1/exports/invoices"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown kind: %d", resp.StatusCode)
	}
}

// An export is an action on buyers' data: the audit trail names the
// token that ran it and the filter, never the token itself.
func TestExportIsAudited(t *testing.T) {
	t.Parallel()
	e := newExportEnv(t, 3, func(c *admin.Config, _ *http.Server) {
		c.Tokens = []ordersync.AdminToken{{Name: "exporter", Role: ordersync.RoleViewer, Token: "tok-secret-1"}}
	})
	get := func(path string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", e.url+path, nil)
		req.Header.Set("Authorization", "Bearer tok-secret-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	if resp, b := get("/v1/exports/order-lines?q=Jos%C3%A9&currency=usd&minTotal=10&status=PAID&format=jsonl&cursor=ignored&limit=1"); resp.StatusCode != 200 {
		t.Fatalf("export by a viewer: %d %s", resp.StatusCode, b)
	}
	e.nextAudit(t)
	if resp, b := get("/v1/exports/orders?paidFrom=yesterday"); resp.StatusCode != 400 {
		t.Fatalf("a bad export: %d %s", resp.StatusCode, b)
	}
	e.nextAudit(t)
	resp, b := get("/v1/audit?action=export.order-lines")
	var trail api.AuditList
	if err := json.Unmarshal(b, &trail); err != nil || resp.StatusCode != 200 || len(trail.Records) != 1 {
		t.Fatalf("GET /v1/audit: %d %v %s", resp.StatusCode, err, b)
	}
	got := trail.Records[0]
	if got.Actor != "exporter" || got.Role != string(ordersync.RoleViewer) || got.Via != string(ordersync.ViaAPI) || got.Outcome != "ok" ||
		got.Object != "account=default&currency=USD&minTotal=10&q=Jos%C3%A9&status=PAID" {
		t.Errorf("the export's audit record: %+v", got)
	}
	resp, b = get("/v1/audit?action=export.orders")
	if err := json.Unmarshal(b, &trail); err != nil || len(trail.Records) != 1 || trail.Records[0].Outcome != "400" || trail.Records[0].Actor != "exporter" {
		t.Errorf("the refused export's audit record: %s", b)
	}
	if strings.Contains(e.logs.String(), "tok-secret-1") || !strings.Contains(e.logs.String(), `"actor":"exporter"`) {
		t.Errorf("the log names the token, or not the exporter:\n%s", e.logs)
	}
}

// Two exports run at once; a third is told to come back later.
func TestExportLimit(t *testing.T) {
	t.Parallel()
	e := newExportEnv(t, 3, nil)
	e.hook.started, e.hook.release = make(chan struct{}, 3), make(chan struct{})
	type answer struct {
		status int
		body   []byte
		err    error
	}
	answers := make(chan answer, 2)
	for range 2 {
		go func() {
			resp, err := http.Get(e.url + "/v1/exports/orders")
			if err != nil {
				answers <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			answers <- answer{resp.StatusCode, b, err}
		}()
	}
	<-e.hook.started
	<-e.hook.started
	resp, b, _ := e.get(t, "/v1/exports/status-changes")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a third export: %d (Retry-After %q) %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	if rec := e.nextAudit(t); rec.Action != "export.status-changes" || rec.Outcome != "503" {
		t.Errorf("the refused export's audit record: %+v", rec)
	}
	close(e.hook.release)
	for range 2 {
		a := <-answers
		if a.err != nil || a.status != 200 || bytes.Count(a.body, []byte("\n")) != 4 {
			t.Errorf("a running export: %d %v %s", a.status, a.err, a.body)
		}
	}
	// The slots are free again.
	if resp, _, err := e.get(t, "/v1/exports/orders"); err != nil || resp.StatusCode != 200 {
		t.Errorf("after both ended: %v %d", err, resp.StatusCode)
	}
}

// A client that goes away ends the export: the mirror is read no further.
func TestExportCancelledByClient(t *testing.T) {
	t.Parallel()
	e := newExportEnv(t, 20, nil)
	firstOut := make(chan struct{})
	e.hook.afterBatch = func(ctx context.Context, n int) {
		if n == 1 {
			close(firstOut)
			select { // hold the export until the client is gone
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				t.Error("the request's context did not end after the client went away")
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/v1/exports/orders", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "order_code,") {
		t.Fatalf("first line %q: %v", line, err)
	}
	<-firstOut
	cancel()
	resp.Body.Close()
	if err := <-e.hook.ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the export ended with %v, want context.Canceled", err)
	}
	if n := e.hook.batches.Load(); n != 1 {
		t.Errorf("%d batches read of 10, want 1: the export went on after the client left", n)
	}
	if rec := e.nextAudit(t); rec.Action != "export.orders" || rec.Outcome != ordersync.OutcomeCancelled {
		t.Errorf("the cancelled export's audit record: %+v", rec)
	}
}

// A read that fails after rows went out cuts the connection: the client
// gets an error, not a clean end of a partial file. One that fails before
// anything went out is a 500.
func TestExportFailsMidway(t *testing.T) {
	t.Parallel()
	e := newExportEnv(t, 6, nil)
	e.hook.failAt = 3
	resp, b, err := e.get(t, "/v1/exports/orders")
	if resp.StatusCode != http.StatusOK || err == nil {
		t.Fatalf("status %d, read error %v: the client took a partial file for a whole one:\n%s", resp.StatusCode, err, b)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Logf("read error: %v", err)
	}
	if n := bytes.Count(b, []byte("\n")); n != 5 {
		t.Errorf("the client got %d lines before the cut, want the header and 2 batches of 2", n)
	}
	if !errors.Is(<-e.hook.ended, errInjected) {
		t.Error("the export did not end with the injected error")
	}
	if !strings.Contains(e.logs.String(), "export failed midway") {
		t.Errorf("the failure is not logged:\n%s", e.logs)
	}
	if rec := e.nextAudit(t); rec.Outcome != errInjected.Error() {
		t.Errorf("the failed export's audit record: %+v", rec)
	}

	e.hook.failAt = 1
	resp, b, err = e.get(t, "/v1/exports/orders")
	if err != nil || resp.StatusCode != http.StatusInternalServerError || !strings.Contains(resp.Header.Get("Content-Type"), "problem+json") {
		t.Errorf("a failure before the first row: %d %v %s", resp.StatusCode, err, b)
	}
}

// An export may outlast the server's read and write timeouts: each batch
// moves the connection's deadlines.
func TestExportOutlastsServerTimeouts(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Millisecond
	e := newExportEnv(t, 4, func(_ *admin.Config, s *http.Server) { s.WriteTimeout, s.ReadTimeout = timeout, timeout })
	e.hook.afterBatch = func(ctx context.Context, n int) {
		if n == 1 {
			// The time passing is what is tested: past both timeouts.
			select {
			case <-time.After(3 * timeout):
			case <-ctx.Done():
			}
		}
	}
	resp, b, err := e.get(t, "/v1/exports/orders")
	if err != nil || resp.StatusCode != 200 || bytes.Count(b, []byte("\n")) != 5 {
		t.Errorf("a slow export: %d %v\n%s", resp.StatusCode, err, b)
	}
	if err := <-e.hook.ended; err != nil {
		t.Errorf("the export ended with %v", err)
	}
}

// mirrorURLs are a fresh SQLite file and, when ORDERSYNC_TEST_POSTGRES_URL
// is set, a fresh PostgreSQL database dropped at cleanup.
func mirrorURLs(t *testing.T) map[string]string {
	t.Helper()
	urls := map[string]string{store.DialectSQLite: "sqlite:" + filepath.Join(t.TempDir(), "m.db")}
	url := testdb.PostgresURL(t)
	if url == "" {
		t.Log("PostgreSQL skipped: set ORDERSYNC_TEST_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
		return urls
	}
	urls[store.DialectPostgres] = url
	return urls
}

// TestExportIsTheListingView holds "export this view" to its word: the
// query of a listing, given to an export, gives exactly the orders every
// page of the listing gives, in the same order, on both dialects; a bad
// filter is a 400 naming it, as the listing's is.
func TestExportIsTheListingView(t *testing.T) {
	t.Parallel()
	for dialect, url := range mirrorURLs(t) {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, err := store.Open(ctx, store.Config{URL: url, IndexAfterApply: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			names := []string{"José Peña", "Ana Núñez", "JOSEFINA Ruiz", "Pedro José Alas"}
			var params []ordersync.ApplyParams
			for i := range 30 {
				currency := "USD"
				if i%5 == 0 {
					currency = "EUR"
				}
				status := []string{"PAID", "PENDING", "FINALIZED"}[i%3]
				payment := ""
				if status != "PENDING" {
					payment = fmt.Sprintf(`,"payment":{"authorizationCode":"A%d","buyer":{"name":%q,"phone":"+503700%02d","email":"b%d@example.com"}}`, i, names[i%4], i, i)
				}
				doc := fmt.Sprintf(`{"orderId":%d,"orderCode":"v%02d","orderReference":"R-%d","name":"Pedido","orderStatus":%q,"lineItems":[],
"subtotal":%d.5,"totalDetails":{"shippingAmount":0,"discountAmount":0,"surchargeAmount":0},"total":%d.5,
"store":{"currencyCode":%q,"timezone":"America/El_Salvador"}%s,"created":"2026-10-%02dT12:00:00.000Z"}`,
					2000+i, i, i, status, 5+i%7*10, 5+i%7*10, currency, payment, 10+i%4)
				o, err := ordersync.DecodeOrder([]byte(doc))
				if err != nil {
					t.Fatal(err)
				}
				params = append(params, ordersync.ApplyParams{Account: ordersync.DefaultAccount, Order: o, Seq: int64(i + 1),
					FetchedAt: time.Date(2026, 10, 13, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Hour), Cause: ordersync.CauseWebhook})
			}
			if _, err := db.ApplyOrders(ctx, params); err != nil {
				t.Fatal(err)
			}
			server, err := admin.New(admin.Config{Orders: db, Exports: db, ExportBatchSize: 3, Audit: db,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(server)
			t.Cleanup(srv.Close)
			get := func(path string) (int, []byte) {
				t.Helper()
				resp, err := http.Get(srv.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				return resp.StatusCode, b
			}

			for _, view := range []string{
				"q=jose&paidFrom=2026-10-13T05:00:00Z&currency=USD&minTotal=25",
				"q=jose&paidFrom=2026-10-13&tz=America/New_York&currency=usd&minTotal=25&sort=total_asc",
				"paidFrom=2026-10-13T03:00:00Z&paidTo=2026-10-14&sort=paid_desc",
				"createdFrom=2026-10-11&createdTo=2026-10-13&maxTotal=45.5&status=PAID&status=PENDING&sort=created_asc",
			} {
				var listed []string
				for cursor := ""; ; {
					status, b := get("/v1/orders?limit=4&" + view + cursor)
					var page struct {
						Orders []struct {
							OrderCode string `json:"orderCode"`
						} `json:"orders"`
						NextCursor *string `json:"nextCursor"`
					}
					if err := json.Unmarshal(b, &page); err != nil || status != 200 {
						t.Fatalf("list %s: %d %v %s", view, status, err, b)
					}
					for _, o := range page.Orders {
						listed = append(listed, o.OrderCode)
					}
					if page.NextCursor == nil {
						break
					}
					cursor = "&cursor=" + *page.NextCursor
				}
				if len(listed) < 2 {
					t.Fatalf("view %s lists %q: the test needs a view of several orders", view, listed)
				}
				// The listing's URL as it is, its page size included.
				status, b := get("/v1/exports/orders?format=jsonl&limit=4&" + view)
				if status != 200 {
					t.Fatalf("export %s: %d %s", view, status, b)
				}
				var exported []string
				for line := range strings.Lines(string(b)) {
					var row map[string]string
					if err := json.Unmarshal([]byte(line), &row); err != nil {
						t.Fatal(err)
					}
					exported = append(exported, row["order_code"])
				}
				if !slices.Equal(exported, listed) {
					t.Errorf("view %s:\nexport  %q\nlisting %q", view, exported, listed)
				}
			}

			for query, params := range map[string][]string{
				"minTotal=ten":                           {"minTotal"},
				"paidFrom=yesterday&currency=dollars":    {"paidFrom", "currency"},
				"sort=newest":                            {"sort"},
				"createdFrom=2026-10-12&since=24h":       {"since"},
				"paidFrom=2026-10-12&paidTo=2026-10-11":  {"paidTo"},
				"tz=Mars/Olympus&createdFrom=2026-10-12": {"tz"},
				"maxTotal=1&minTotal=2&format=xlsx":      {"maxTotal", "format"},
			} {
				status, b := get("/v1/exports/orders?" + query)
				var p api.Problem
				_ = json.Unmarshal(b, &p)
				for _, param := range params {
					if status != http.StatusBadRequest || len(p.Errors[param]) == 0 {
						t.Errorf("%s: %d %s, want 400 naming %s", query, status, b, param)
					}
				}
			}
		})
	}
}
