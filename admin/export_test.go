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
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/export"
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
// two orders a batch, its log in logs.
type exportEnv struct {
	url  string
	srv  *httptest.Server
	hook *hookedExporter
	logs *syncBuffer
}

func newExportEnv(t *testing.T, n int, configure func(*admin.Config, *http.Server)) *exportEnv {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, store.Config{URL: filepath.Join(t.TempDir(), "m.db")})
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
	e := &exportEnv{hook: &hookedExporter{DB: db, ended: make(chan error, 8)}, logs: &syncBuffer{}}
	cfg := admin.Config{Orders: db, Exports: e.hook, ExportBatchSize: 2,
		Logger: slog.New(slog.NewJSONHandler(e.logs, nil))}
	srv := httptest.NewUnstartedServer(nil)
	if configure != nil {
		configure(&cfg, srv.Config)
	}
	api, err := admin.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = api
	srv.Start()
	t.Cleanup(srv.Close)
	e.url, e.srv = srv.URL, srv
	return e
}

// syncBuffer lets the server's goroutines log into one buffer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
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
	for name, want := range map[string]string{"total": "13,10", "buyer_phone": "'+50370000000", "order_reference": "'=1+1",
		"authorization_code": "'-204981", "buyer_email": "'@jose@example.com", "created_at": "2026-10-10T06:00:00+02:00"} {
		if got := col(recs[1], name); got != want {
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

	// Who ran each export is logged, at INFO.
	if n := strings.Count(e.logs.String(), `"msg":"export started"`); n != 8 {
		t.Errorf("%d exports logged as started, want 8:\n%s", n, e.logs)
	}
	if !strings.Contains(e.logs.String(), `"caller":"loopback (no admin tokens)"`) {
		t.Errorf("the log does not say who ran the export:\n%s", e.logs)
	}
}

func TestExportBadInput(t *testing.T) {
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
		var p admin.Problem
		_ = json.Unmarshal(b, &p)
		if resp.StatusCode != http.StatusBadRequest || len(p.Errors[field]) == 0 {
			t.Errorf("%s: %d %s, want 400 naming %s", path, resp.StatusCode, b, field)
		}
	}
	if resp, _, _ := e.get(t, "/v1/exports/invoices"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown kind: %d", resp.StatusCode)
	}
}

// The caller is named by a digest of its token, never the token.
func TestExportLogsTheCaller(t *testing.T) {
	e := newExportEnv(t, 1, func(c *admin.Config, _ *http.Server) {
		c.Tokens = []ordersync.AdminToken{{Name: "exporter", Role: ordersync.RoleOperator, Token: "tok-secret-1"}}
	})
	req, _ := http.NewRequest("GET", e.url+"/v1/exports/orders", nil)
	req.Header.Set("Authorization", "Bearer tok-secret-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	logs := e.logs.String()
	if resp.StatusCode != 200 || !strings.Contains(logs, `"caller":"token sha256:`) || strings.Contains(logs, "tok-secret-1") {
		t.Errorf("%d; log:\n%s", resp.StatusCode, logs)
	}
}

// Two exports run at once; a third is told to come back later.
func TestExportLimit(t *testing.T) {
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
}

// A read that fails after rows went out cuts the connection: the client
// gets an error, not a clean end of a partial file. One that fails before
// anything went out is a 500.
func TestExportFailsMidway(t *testing.T) {
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

	e.hook.failAt = 1
	resp, b, err = e.get(t, "/v1/exports/orders")
	if err != nil || resp.StatusCode != http.StatusInternalServerError || !strings.Contains(resp.Header.Get("Content-Type"), "problem+json") {
		t.Errorf("a failure before the first row: %d %v %s", resp.StatusCode, err, b)
	}
}

// An export may outlast the server's read and write timeouts: each batch
// moves the connection's deadlines.
func TestExportOutlastsServerTimeouts(t *testing.T) {
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
