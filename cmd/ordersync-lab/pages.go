package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/child"
	"github.com/ordersync/ordersync/internal/redact"
	"github.com/ordersync/ordersync/internal/retry"
)

// pagesOptions size a pages run.
type pagesOptions struct {
	// DatabaseURL is the mirror: store's TestPagesMirror fills one.
	DatabaseURL string
	// Runs is how many requests each page is timed over, after one that
	// warms it.
	Runs int
	// Only, a regular expression, times only the pages whose names match.
	Only string

	exe string
}

// pagesTarget is the p95 every page must be within (docs/benchmarks.md's
// target for the back office's pages); a page whose warming request takes
// pagesGiveUp is not timed further.
const (
	pagesTarget = 100 * time.Millisecond
	pagesGiveUp = 5 * time.Second
)

// pagesStores are the stores of TestPagesMirror's mirror, as serve is
// configured with them, and the calling code of each one's phones.
var pagesStores = []struct{ account, callingCode string }{{ordersync.DefaultAccount, "503"}, {"madrid", "34"}}

func newPagesCommand() *cobra.Command {
	opts := pagesOptions{Runs: 20}
	cmd := &cobra.Command{
		Use:   "pages",
		Short: "Time every back-office page and API list over HTTP against ordersync serve on a large mirror",
		Long: `pages starts ordersync serve on --database-url (a mirror that store's
TestPagesMirror filled: two stores, default in USD and America/El_Salvador,
madrid in EUR and Europe/Madrid, its read side indexed) with both stores,
the mirror's two endpoints and an operator token configured, and the
reconciler off (no upstream answers). It signs in to the console as a
browser does, and times each page a finance person or an operator loads,
and the admin API's lists, over loopback HTTP: --runs requests after a
warming one, the whole body read. Pages that vary (a search, a per-day
link of Daily totals, an order) take a different value each request: the
searches' from the API's list of paid orders (an email in capitals, a
phone in four ways, a reference's beginning in capitals, an amount), the
per-day links and the overview's from those pages' own links.

An export's download is timed to its first 64 KB, the first batch of
its rows.

It prints, per page, p50 and p95 in ms, serve's CPU per request (from
/proc), the weight of the last answer, and whether the p95 is within
100 ms; a page whose warming request takes 5 s is not timed further.
It fails when a page is not within 100 ms or does not answer 200.`,
		Args: cobra.NoArgs,
		RunE: withBinary(func(cmd *cobra.Command, exe string) error {
			opts.exe = exe
			return runPages(cmd.Context(), cmd.OutOrStdout(), opts)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&opts.DatabaseURL, "database-url", "", "the mirror to serve: a SQLite path or a postgres:// URL (with search_path for a schema)")
	f.IntVar(&opts.Runs, "runs", opts.Runs, "timed requests per page")
	f.StringVar(&opts.Only, "only", "", "time only the pages whose names match this regular expression")
	return cmd
}

// pagesRun is one run: the child, its console session and API token.
type pagesRun struct {
	c       *child.Process
	browser *http.Client
	token   string
	runs    int
}

func runPages(ctx context.Context, out io.Writer, opts pagesOptions) error {
	if opts.DatabaseURL == "" {
		return errors.New("pages: --database-url is required")
	}
	if opts.Runs < 20 {
		return fmt.Errorf("pages: --runs must be at least 20 for a p95, got %d", opts.Runs)
	}
	only, err := regexp.Compile(opts.Only)
	if err != nil {
		return fmt.Errorf("pages: --only: %w", err)
	}
	dir, err := os.MkdirTemp("", "ordersync-pages-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	token := app.RandomSecret()
	conf := filepath.Join(dir, "ordersync.yaml")
	config := fmt.Sprintf(`log_level: warn
webhook_secrets: [%s]
database_url: %q
reconcile_rps: 0
admin_tokens:
  - {name: ops, role: operator, token: %s}
accounts:
  madrid: {api_base_url: "http://127.0.0.1:1", secret_key: %s, webhook_secrets: [%s]}
endpoints:
  - {id: erp, url: "http://127.0.0.1:1/erp", secret: whsec_%s, events: [order.paid]}
  - {id: warehouse, url: "http://127.0.0.1:1/warehouse", secret: whsec_%s, events: [order.paid]}
`, app.RandomSecret(), opts.DatabaseURL, token, app.RandomSecret(), app.RandomSecret(), endpointSecret(), endpointSecret())
	if err := os.WriteFile(conf, []byte(config), 0o600); err != nil {
		return err
	}
	c, err := child.Start(ctx, child.Config{Exe: opts.exe, DataDir: filepath.Join(dir, "data"), LogPath: filepath.Join(dir, "ordersync.log"),
		APIBaseURL: "http://127.0.0.1:1", SecretKey: app.RandomSecret(), Args: []string{"--config", conf, "--nats-port", "0"},
		ReadyTimeout: 5 * time.Minute})
	if err != nil {
		return fmt.Errorf("pages: start serve: %w", err)
	}
	defer c.Stop()
	jar, _ := cookiejar.New(nil)
	r := &pagesRun{c: c, token: token, runs: opts.Runs, browser: &http.Client{Jar: jar, Timeout: 2 * time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if err := r.signIn(ctx); err != nil {
		return err
	}
	pages, err := r.pages(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "ordersync-lab pages: serve pid %d on %s, %d requests per page after a warming one\n", c.PID(), redact.URL(opts.DatabaseURL), opts.Runs)
	fmt.Fprintln(out, "| page | p50 ms | p95 ms | serve CPU ms per request | KB | within 100 ms |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|")
	var slow []string
	for _, p := range pages {
		if !only.MatchString(p.name) {
			continue
		}
		t, err := r.time(ctx, p)
		if err != nil {
			fmt.Fprintf(out, "| %s | | | | | **no**: %s |\n", p.name, ordersync.Clip(err.Error(), 200))
			slow = append(slow, p.name)
			continue
		}
		ok := "yes"
		if t.p95 > pagesTarget {
			ok, slow = "**no**", append(slow, p.name)
		}
		fmt.Fprintf(out, "| %s | %.1f | %.1f | %.1f | %.1f | %s |\n", p.name, ms(t.p50), ms(t.p95), ms(t.cpu), float64(t.size)/1024, ok)
	}
	if len(slow) > 0 {
		return fmt.Errorf("pages: p95 over %s: %s", pagesTarget, strings.Join(slow, "; "))
	}
	return nil
}

// endpointSecret is an endpoint's secret after its whsec_ prefix: base64
// of 32 random bytes.
func endpointSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// signIn starts a console session with the operator token, as the
// sign-in form does.
func (r *pagesRun) signIn(ctx context.Context) error {
	_, page, err := r.get(ctx, "/console/sign-in", false)
	if err != nil {
		return err
	}
	m := csrfInput.FindStringSubmatch(page)
	if m == nil {
		return errors.New("pages: no CSRF token on the sign-in page")
	}
	form := url.Values{"csrf": {m[1]}, "token": {r.token}}
	req, err := http.NewRequestWithContext(ctx, "POST", r.c.AdminURL()+"/console/sign-in", strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", r.c.AdminURL())
	resp, err := r.browser.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return fmt.Errorf("pages: sign in: %s", resp.Status)
	}
	return nil
}

// get reads path: as the signed-in browser, or with the API token.
func (r *pagesRun) get(ctx context.Context, path string, api bool) (int, string, error) {
	return r.read(ctx, path, api, 0)
}

// read is get of the first limit bytes of the body (all of it for 0).
func (r *pagesRun) read(ctx context.Context, path string, api bool, limit int64) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", r.c.AdminURL()+path, nil)
	if err != nil {
		return 0, "", err
	}
	if api {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.browser.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var body io.Reader = resp.Body
	if limit > 0 {
		body = io.LimitReader(body, limit)
	}
	b, err := io.ReadAll(body)
	return resp.StatusCode, string(b), err
}

// downloadSlotWaits is how many times a download refused for want of an
// export slot is asked for again, downloadSlotPause apart.
const (
	downloadSlotWaits = 100
	downloadSlotPause = 20 * time.Millisecond
)

// readOnceFree reads a page with read and how long that took. A download
// (the first bytes of an export) is asked for again while the server
// answers 503: it runs two exports at once, and one the previous request
// abandoned holds its slot until the server notices the client has gone,
// which may be after the next request arrives. Only the answered request
// is timed.
func readOnceFree(ctx context.Context, download bool, read func() (int, string, error)) (int, string, time.Duration, error) {
	for waits := 0; ; waits++ {
		start := time.Now()
		status, body, err := read()
		took := time.Since(start)
		if err != nil || !download || status != http.StatusServiceUnavailable || waits == downloadSlotWaits {
			return status, body, took, err
		}
		if err := retry.Sleep(ctx, downloadSlotPause); err != nil {
			return status, body, took, err
		}
	}
}

// page is one page timed: its name, whether it is the API's, and the path
// of its i-th request. A download's first page is timed to its first
// firstBytes bytes (0: the whole body).
type page struct {
	name       string
	api        bool
	path       func(i int) string
	firstBytes int64
}

func fixed(name, path string) page { return page{name: name, path: func(int) string { return path }} }
func apiPage(name, path string) page {
	return page{name: name, api: true, path: func(int) string { return path }}
}

// cycle is a page whose requests take paths in turn.
func cycle(name string, api bool, paths []string) page {
	return page{name: name, api: api, path: func(i int) string { return paths[i%len(paths)] }}
}

type pageTimes struct {
	p50, p95, cpu time.Duration
	size          int
}

// time requests p r.runs times after a warming request.
func (r *pagesRun) time(ctx context.Context, p page) (pageTimes, error) {
	var (
		times []time.Duration
		t     pageTimes
	)
	cpu0 := time.Duration(0)
	for i := range r.runs + 1 {
		if i == 1 {
			var err error
			if cpu0, err = r.c.CPU(); err != nil {
				return t, err
			}
		}
		status, body, took, err := readOnceFree(ctx, p.firstBytes > 0, func() (int, string, error) {
			return r.read(ctx, p.path(i), p.api, p.firstBytes)
		})
		if err != nil {
			return t, err
		}
		if status != http.StatusOK {
			return t, fmt.Errorf("GET %s: %d %s", p.path(i), status, ordersync.Clip(body, 300))
		}
		if i > 0 {
			times = append(times, took)
		} else if took > pagesGiveUp {
			return t, fmt.Errorf("the warming request took %s", took.Round(time.Millisecond))
		}
		t.size = len(body)
	}
	cpu1, err := r.c.CPU()
	if err != nil {
		return t, err
	}
	slices.Sort(times)
	t.p50, t.p95, t.cpu = times[len(times)/2], times[(len(times)*95+99)/100-1], (cpu1-cpu0)/time.Duration(r.runs)
	return t, nil
}

var (
	ordersLink = regexp.MustCompile(`href="(/console/orders\?[^"]+)"`)
	rangeParam = regexp.MustCompile(`(created|paid|cancelled|finalized|reversed)From=`)
)

// links are the page's links to the Orders page, by the range they
// filter on ("created", "paid", …; "" for none).
func links(page string) map[string][]string {
	out := map[string][]string{}
	for _, m := range ordersLink.FindAllStringSubmatch(page, -1) {
		l := html.UnescapeString(m[1])
		kind := ""
		if k := rangeParam.FindStringSubmatch(l); k != nil {
			kind = k[1]
		}
		if !slices.Contains(out[kind], l) {
			out[kind] = append(out[kind], l)
		}
	}
	return out
}

// pages are the pages to time, with the searches' and links' values read
// from the running serve.
func (r *pagesRun) pages(ctx context.Context) ([]page, error) {
	var out []page
	monthAgo := time.Now().UTC().AddDate(0, 0, -30).Format("2006-01-02")
	today := time.Now().UTC().Format("2006-01-02")
	out = append(out, fixed("Overview", "/console/"), fixed("Overview's figures (overview.json)", "/console/overview.json"))
	overviewStatus, overview, err := r.get(ctx, "/console/", false)
	if err != nil || overviewStatus != http.StatusOK {
		// Timed below, where it fails; its links are not.
		overview = ""
	}
	var ovLinks []string
	for _, ls := range links(overview) {
		ovLinks = append(ovLinks, ls...)
	}
	if len(ovLinks) > 0 {
		out = append(out, cycle(fmt.Sprintf("Overview's links to orders (%d)", len(ovLinks)), false, ovLinks))
	}
	for _, st := range append(pagesStores, struct{ account, callingCode string }{"*", ""}) {
		acct := "account=" + st.account
		o := func(name, query string) page {
			return fixed("Orders "+st.account+", "+name, "/console/orders?"+acct+query)
		}
		out = append(out, o("no filter", ""), o("collected", "&status=collected"), o("cancelled", "&status=CANCELLED"),
			o("pending", "&status=PENDING"), o("reversed in the last 30 days", "&reversedFrom="+monthAgo),
			o("collected, paid in the last 30 days", "&status=collected&paidFrom="+monthAgo+"&paidTo="+today),
			o("largest total first", "&sort=total_desc"))
		status, totals, err := r.get(ctx, "/console/totals?"+acct, false)
		if err != nil || status != http.StatusOK {
			return nil, fmt.Errorf("pages: Daily totals of %s: %d %v", st.account, status, err)
		}
		out = append(out, fixed("Daily totals "+st.account+", the default 30 days", "/console/totals?"+acct))
		byKind := links(totals)
		for _, kind := range []string{"created", "paid", "cancelled", "finalized", "reversed"} {
			if ls := byKind[kind]; len(ls) > 0 {
				out = append(out, cycle(fmt.Sprintf("Orders %s, Daily totals' %s links (%d days)", st.account, kind, len(ls)), false, ls))
			}
		}
		out = append(out, fixed("Dead letters "+st.account, "/console/dead-letters?"+acct),
			fixed("Export form "+st.account, "/console/export?"+acct),
			page{name: "Export download " + st.account + ", every order, its first 64 KB", path: func(int) string { return "/console/export/download?" + acct },
				firstBytes: 64 << 10})
		if st.account == "*" {
			continue
		}
		out = append(out, apiPage("API orders "+st.account, "/v1/orders?"+acct),
			apiPage("API orders "+st.account+", collected, counted", "/v1/orders?"+acct+"&status=collected&count=exact&paidFrom="+monthAgo+"&paidTo="+today),
			apiPage("API daily totals "+st.account+", 30 days", "/v1/reports/daily?"+acct+"&from="+monthAgo+"&to="+today),
			apiPage("API dead letters "+st.account, "/v1/dead-letters?"+acct))
		searches, codes, err := r.searches(ctx, st.account, st.callingCode)
		if err != nil {
			return nil, err
		}
		for _, s := range searches {
			paths := make([]string, len(s.qs))
			api := make([]string, len(s.qs))
			for i, q := range s.qs {
				paths[i] = "/console/orders?" + acct + "&q=" + url.QueryEscape(q)
				api[i] = "/v1/orders?" + acct + "&q=" + url.QueryEscape(q)
			}
			out = append(out, cycle("Search "+st.account+", "+s.name, false, paths), cycle("API search "+st.account+", "+s.name, true, api))
			if s.name == "email in capitals" {
				all := make([]string, len(s.qs))
				for i, q := range s.qs {
					all[i] = "/console/orders?account=*&q=" + url.QueryEscape(q)
				}
				out = append(out, cycle("Search all stores, "+s.name+" ("+st.account+"'s buyers)", false, all))
			}
		}
		var order, apiOrder []string
		for _, c := range codes {
			order = append(order, "/console/orders/"+url.PathEscape(c)+"?"+acct)
			apiOrder = append(apiOrder, "/v1/orders/"+url.PathEscape(c)+"?"+acct)
		}
		out = append(out, cycle("Order "+st.account, false, order), cycle("API order "+st.account, true, apiOrder))
	}
	out = append(out, fixed("Endpoints", "/console/endpoints"), fixed("Failed deliveries of an endpoint", "/console/endpoints/erp/failed"),
		fixed("Audit", "/console/audit"), apiPage("API endpoints", "/v1/endpoints"),
		apiPage("API failed deliveries", "/v1/endpoints/erp/failed-deliveries"), apiPage("API delivery dead letters", "/v1/delivery-dead-letters"),
		apiPage("API events", "/v1/events"), apiPage("API audit", "/v1/audit"))
	return out, nil
}

// search is one kind of search and the values its requests take in turn.
type search struct {
	name string
	qs   []string
}

// searches are the searches of a caller who says they paid, from the
// account's paid orders, and those orders' codes.
func (r *pagesRun) searches(ctx context.Context, account, callingCode string) ([]search, []string, error) {
	status, body, err := r.get(ctx, "/v1/orders?account="+account+"&status=PAID&limit=100", true)
	if err != nil || status != http.StatusOK {
		return nil, nil, fmt.Errorf("pages: the paid orders of %s: %d %v %s", account, status, err, ordersync.Clip(body, 300))
	}
	var page struct {
		Orders []ordersync.Order `json:"orders"` // the document's fields, flat
	}
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		return nil, nil, fmt.Errorf("pages: the paid orders of %s: %w", account, err)
	}
	var (
		email, ref, amount, codes []string
		phones                    [4][]string
	)
	for _, o := range page.Orders {
		codes = append(codes, o.OrderCode)
		ref = append(ref, strings.ToUpper(o.OrderReference[:min(9, len(o.OrderReference))]))
		amount = append(amount, o.Total.String())
		p := o.Payment
		if p == nil || p.Buyer == nil {
			continue
		}
		email = append(email, strings.ToUpper(p.Buyer.Email))
		national := strings.TrimPrefix(p.Buyer.Phone, "+"+callingCode)
		half := len(national) / 2
		for i, f := range []string{national, national[:half] + "-" + national[half:],
			"+" + callingCode + " " + national[:half] + " " + national[half:], "(" + callingCode + ") " + national[:half] + "." + national[half:]} {
			phones[i] = append(phones[i], f)
		}
	}
	if len(email) == 0 {
		return nil, nil, fmt.Errorf("pages: no paid order of %s with a buyer", account)
	}
	return []search{{"email in capitals", email}, {"phone, national digits", phones[0]}, {"phone with a dash", phones[1]},
		{"phone with the calling code and spaces", phones[2]}, {"phone with the calling code in parentheses and a dot", phones[3]},
		{"reference's beginning in capitals", ref}, {"amount", amount}}, codes, nil
}
