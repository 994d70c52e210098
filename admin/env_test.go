package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/delivery"
	"github.com/ordersync/ordersync/dispatch"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
	"github.com/ordersync/ordersync/metrics"
	"github.com/ordersync/ordersync/paymentlink"
	"github.com/ordersync/ordersync/queue"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/worker"
)

// The listener under test and its clients, shared by the tests of this
// package: the API over real pieces (apiEnv), the console with every
// action (actionsEnv), a console server over a mirror (consoleServer), and
// a cookie-keeping browser that signs in and posts forms with their CSRF
// token. The browser tests' data set is dataset_test.go's; headless
// Chromium is headless_test.go's.

// apiEnv is the admin API over real pieces: a SQLite mirror, the simulator
// behind the real client, the one fetch-and-apply path, and an embedded
// queue for replays.
type apiEnv struct {
	url   string
	sim   *sim.Server
	db    *store.DB
	queue *queue.Queue
	ready error
	api   *admin.Server
}

func newAPIEnv(t *testing.T) *apiEnv {
	t.Helper()
	return newAPIEnvWith(t, nil)
}

// newAPIEnvWith is newAPIEnv with the API's configuration edited by
// configure (tokens, the audit trail) before it starts.
func newAPIEnvWith(t *testing.T, configure func(e *apiEnv, c *admin.Config)) *apiEnv {
	t.Helper()
	ctx := context.Background()
	e := &apiEnv{}
	var err error
	if e.sim, err = sim.New(sim.Config{SecretKey: "sk", Seed: 3}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.sim.Close() })
	simURL, err := e.sim.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	client, err := paymentlink.New(paymentlink.Config{BaseURL: simURL, SecretKey: "sk"})
	if err != nil {
		t.Fatal(err)
	}
	if e.db, err = store.Open(ctx, store.Config{URL: testdb.SQLitePath(t), IndexAfterApply: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.db.Close() })
	emb, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Shutdown)
	nc, err := emb.Connect("admin-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if e.queue, err = queue.New(ctx, nc, queue.Config{}); err != nil {
		t.Fatal(err)
	}
	reg := metrics.NewRegistry()
	syncer, err := worker.NewSyncer(worker.SyncerConfig{Upstream: client, Mirror: e.db, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	accounts := worker.Accounts{ordersync.DefaultAccount: syncer}
	follower, err := worker.NewFollower(worker.FollowerConfig{Accounts: accounts, Mirror: e.db, Reader: e.db})
	if err != nil {
		t.Fatal(err)
	}
	replayer, err := worker.NewReplayer(worker.ReplayerConfig{DeadLetters: e.db, Publisher: e.queue, Accounts: accounts})
	if err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(metrics.NewOrdersCollector(e.db, 0, nil))
	cfg := admin.Config{
		Orders: e.db, Reports: e.db, DeadLetters: e.db, Follower: follower, Replayer: replayer,
		Metrics: metrics.Handler(reg), Ready: func(context.Context) error { return e.ready },
	}
	if configure != nil {
		configure(e, &cfg)
	}
	server, err := admin.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server)
	t.Cleanup(srv.Close)
	e.url, e.api = srv.URL, server
	return e
}

func (e *apiEnv) do(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// createLink creates a payment link through the API and returns its order
// code.
func (e *apiEnv) createLink(t *testing.T, body string) string {
	t.Helper()
	status, b := e.do(t, "POST", "/v1/payment-links", body)
	if status != http.StatusOK {
		t.Fatalf("create: %d %s", status, b)
	}
	var res ordersync.PaymentLinkResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return res.OrderCode
}

// payAndTrack has buyer pay the order in the simulator and tracks it
// through the API, so that the mirror holds the payment.
func (e *apiEnv) payAndTrack(t *testing.T, code string, buyer ordersync.Buyer) {
	t.Helper()
	if _, err := e.sim.Pay(code, buyer); err != nil {
		t.Fatal(err)
	}
	if status, b := e.do(t, "POST", "/v1/orders/track", `{"orderCode":"`+code+`"}`); status != http.StatusOK {
		t.Fatalf("track: %d %s", status, b)
	}
}

// clock is a time the test moves by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// consoleServer is the admin listener over db with tokens, as a restart
// with a new configuration would start it.
func consoleServer(t *testing.T, db *store.DB, tokens []ordersync.AdminToken, edit func(*admin.Config)) string {
	t.Helper()
	cfg := admin.Config{Orders: db, Tokens: tokens, Audit: db, Sessions: db}
	if edit != nil {
		edit(&cfg)
	}
	api, err := admin.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv.URL
}

func openTestDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), store.Config{URL: testdb.SQLitePath(t), IndexAfterApply: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// browser keeps cookies as a browser would and follows no redirect, so
// each answer can be looked at.
type browser struct {
	t       *testing.T
	base    string
	cookies map[string]*http.Cookie
	header  http.Header
}

func newBrowser(t *testing.T, base string) *browser {
	return &browser{t: t, base: base, cookies: map[string]*http.Cookie{}, header: http.Header{}}
}

func (b *browser) do(method, path string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range b.header {
		req.Header[k] = v
	}
	for _, c := range b.cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	for _, c := range resp.Cookies() {
		if c.MaxAge < 0 {
			delete(b.cookies, c.Name)
		} else {
			b.cookies[c.Name] = c
		}
	}
	return resp, string(text)
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the CSRF token of the page's forms.
func (b *browser) csrf(page string) string {
	b.t.Helper()
	m := csrfInput.FindStringSubmatch(page)
	if m == nil {
		b.t.Fatalf("no CSRF token in the page:\n%s", page)
	}
	return m[1]
}

// signIn fills in the sign-in form with token and returns the answer.
func (b *browser) signIn(token string) *http.Response {
	b.t.Helper()
	_, page := b.do("GET", "/console/sign-in", nil)
	resp, _ := b.do("POST", "/console/sign-in", url.Values{"csrf": {b.csrf(page)}, "token": {token}})
	return resp
}

// actionsEnv is the console over real pieces with every action it has:
// the dead letters' Replayer (behind a gate the test may close), a
// running Dispatcher for the endpoints, and one endpoint whose receiver
// counts what it gets.
type actionsEnv struct {
	*apiEnv
	endpoint *ordersync.Endpoint
	// received counts the requests the endpoint's receiver answered.
	received atomic.Int64
	gate     *gatedReplayer
	// mu guards refuse, the order codes the receiver answers 500 for, and
	// perOrder, the signed requests it received for each order code.
	mu       sync.Mutex
	refuse   map[string]bool
	perOrder map[string]int
}

// orderOf is the order code of a delivery's body, "" for a ping.
func orderOf(body []byte) string {
	var ev struct {
		Data struct {
			OrderCode string `json:"orderCode"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &ev)
	return ev.Data.OrderCode
}

// gatedReplayer is the real Replayer, each replay of one letter held
// until the test lets it through (when hold is set), so a job can be seen
// running.
type gatedReplayer struct {
	ordersync.Replayer
	hold    atomic.Bool
	release chan struct{}
	// entered has a value for each replay held.
	entered chan struct{}
}

func (g *gatedReplayer) ReplayDeadLetter(ctx context.Context, id int64) error {
	if g.hold.Load() {
		select {
		case g.entered <- struct{}{}:
		default:
		}
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.Replayer.ReplayDeadLetter(ctx, id)
}

func newActionsEnv(t *testing.T) *actionsEnv {
	t.Helper()
	return newActionsEnvWith(t, nil)
}

// newActionsEnvWith is newActionsEnv with the API's configuration edited
// by configure after the actions' own settings.
func newActionsEnvWith(t *testing.T, configure func(e *apiEnv, c *admin.Config)) *actionsEnv {
	t.Helper()
	a := &actionsEnv{refuse: map[string]bool{}, perOrder: map[string]int{}}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("webhook-signature") == "" {
			w.WriteHeader(http.StatusOK)
			return
		}
		a.received.Add(1)
		code := orderOf(body)
		a.mu.Lock()
		a.perOrder[code]++
		refused := a.refuse[code]
		a.mu.Unlock()
		if refused {
			http.Error(w, "warehouse down for "+code, http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(receiver.Close)
	a.apiEnv = newAPIEnvWith(t, func(e *apiEnv, c *admin.Config) {
		c.Tokens, c.Audit, c.Sessions, c.Exports = roleTokens, e.db, e.db, e.db
		c.Endpoints, c.DeliveryDeadLetters, c.SecretGrace, c.ReplayJobs, c.OrderCodes = e.db, e.db, time.Hour, e.db, e.db
		d, err := dispatch.New(dispatch.Config{Endpoints: e.db, DeadLetters: e.db, Log: e.db, Stream: e.queue})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("dispatcher: %v", err)
			}
		})
		c.Deliverer = d
		a.gate = &gatedReplayer{Replayer: c.Replayer, release: make(chan struct{}), entered: make(chan struct{}, 16)}
		c.Replayer = a.gate
		if configure != nil {
			configure(e, c)
		}
	})
	t.Cleanup(a.api.Close)
	secret, err := delivery.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	a.endpoint, err = a.db.CreateEndpoint(context.Background(), ordersync.EndpointParams{URL: receiver.URL + "/hook",
		Events: ordersync.HookEvents, Description: "fulfilment", Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// addLetters adds n dead letters of reason for account and returns their
// ids.
func (a *actionsEnv) addLetters(t *testing.T, n int, reason ordersync.DeadLetterReason, account string) []int64 {
	t.Helper()
	var ids []int64
	for range n {
		i := len(ids)
		id, err := a.db.AddDeadLetter(context.Background(), ordersync.DeadLetter{MsgID: fmt.Sprintf("m-%s-%s-%d", account, reason, i),
			Account: account, Reason: reason, Attempts: 2, LastError: "no order for id", OrderID: ordersync.ID(fmt.Sprint(9000 + i)),
			Body: []byte(fmt.Sprintf(`{"orderId":"%d","orderType":"FASTLINK_CHARGE","type":"Created"}`, 9000+i)), CreatedAt: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// replayCounts is how often each letter was replayed.
func (a *actionsEnv) replayCounts(t *testing.T, ids []int64) []int {
	t.Helper()
	out := make([]int, len(ids))
	for i, id := range ids {
		dl, err := a.db.FindDeadLetter(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = dl.ReplayCount
	}
	return out
}

func allEqual(ns []int, want int) bool {
	for _, n := range ns {
		if n != want {
			return false
		}
	}
	return true
}

// signedIn is a browser signed in with token, and the CSRF token of its
// forms.
func signedIn(t *testing.T, base, token string) (*browser, string) {
	t.Helper()
	b := newBrowser(t, base)
	if resp := b.signIn(token); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in %s: %d", token, resp.StatusCode)
	}
	_, page := b.do("GET", "/console/", nil)
	return b, b.csrf(page)
}
