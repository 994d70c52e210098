package admin_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/ordersync/ordersync/internal/leak"
	"github.com/ordersync/ordersync/sim"
)

// screenshotsEnv names the directory (relative to the repository root, or
// absolute) where the browser tests save a PNG of each page they see.
const screenshotsEnv = "ORDERSYNC_CONSOLE_SCREENSHOTS"

// chromium is the browser on the PATH, or the test skips saying so.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on the PATH (chromium, chromium-browser): the console's browser tests need it; apt-get install chromium")
	return ""
}

// headless is a browser context of its own for t (cookies, storage and
// cache apart, as a fresh profile had them) in the chromium the tests
// share, and the errors its pages report: uncaught exceptions,
// console.error calls and the browser's error log (a blocked inline script
// or style among them), but failed loads, whose statuses the tests check
// themselves.
type headless struct {
	t    *testing.T
	ctx  context.Context
	mu   sync.Mutex
	errs []string
}

func newHeadless(t *testing.T) *headless {
	t.Helper()
	ctx, cancel := chromedp.NewContext(sharedChromium(t), chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	h := &headless{t: t, ctx: ctx}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 860)); err != nil {
		t.Fatalf("open a browser context: %v", err)
	}
	if err := chromedp.Listen(ctx, h.watch); err != nil {
		t.Fatal(err)
	}
	return h
}

// shared is the one chromium of the browser tests, started by the first
// of them and stopped by TestMain: a browser context costs a tab, a
// browser about two seconds of start.
var shared struct {
	once sync.Once
	ctx  context.Context
	err  error
	stop func()
}

func sharedChromium(t *testing.T) context.Context {
	t.Helper()
	exe := chromium(t)
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "ordersync-chromium-")
		if err != nil {
			shared.err = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe),
			chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(dir),
			chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true))
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(actx)
		shared.ctx, shared.stop = ctx, func() { cancel(); cancelAlloc(); os.RemoveAll(dir) }
		// The first Run starts the browser; it must not carry a timeout.
		shared.err = chromedp.Do(ctx)
	})
	if shared.err != nil {
		t.Fatalf("start chromium: %v", shared.err)
	}
	return shared.ctx
}

// TestMain stops the shared chromium after the tests.
func TestMain(m *testing.M) {
	leak.Main(m, func() {
		if shared.stop != nil {
			shared.stop()
		}
	})
}

func (h *headless) watch(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		msg = "exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			msg += " " + ev.ExceptionDetails.Exception.Description
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError {
			msg = "console.error"
			for _, a := range ev.Args {
				msg += " " + string(a.Value)
			}
		}
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level == cdplog.EntryLevelError && ev.Entry.Source != cdplog.EntrySourceNetwork {
			msg = fmt.Sprintf("%s log: %s (%s)", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
		}
	}
	if msg != "" {
		h.mu.Lock()
		h.errs = append(h.errs, msg)
		h.mu.Unlock()
	}
}

// check fails t with every error the pages reported so far.
func (h *headless) check() {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.errs {
		h.t.Errorf("the page reported an error: %s", e)
	}
	h.errs = nil
}

// do runs steps with a deadline.
func (h *headless) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		h.t.Fatalf("%s: %v", what, err)
	}
}

// text is the visible text of the first element sel matches on the page
// as loaded, or the test fails saying what the page is instead.
func (h *headless) text(sel string) string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	q, _ := json.Marshal(sel)
	s, err := chromedp.Run(ctx, chromedp.Evaluate[*string](`document.querySelector(`+string(q)+`)?.innerText ?? null`))
	if err != nil {
		h.t.Fatalf("text of %s: %v", sel, err)
	}
	if s == nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		h.t.Fatalf("no %s in the page %s:\n%s", sel, loc, body)
	}
	return *s
}

// load runs steps that leave the page (a click on a link or a submit) and
// waits for the next page's load event.
func (h *headless) load(what string, steps ...chromedp.Action[chromedp.Void]) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	loaded := chromedp.Events(ctx, page.LoadEventFired)
	if err := chromedp.Do(ctx, steps...); err != nil {
		h.t.Fatalf("%s: %v", what, err)
	}
	for _, err := range loaded {
		if err != nil {
			h.t.Fatalf("%s: waiting for the page: %v", what, err)
		}
		break
	}
	h.check()
}

// shot saves the page as name.png when screenshots are asked for.
func (h *headless) shot(name string) {
	h.t.Helper()
	dir := os.Getenv(screenshotsEnv)
	if dir == "" {
		return
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", dir) // the test runs in admin/
	}
	png, err := chromedp.Run(h.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		h.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// signIn signs in with token from the sign-in page.
func (h *headless) signIn(base, token string) {
	h.t.Helper()
	h.load("open the sign-in page", chromedp.Navigate(base+"/console/sign-in"))
	h.do("type the token", chromedp.SendKeys(chromedp.CSS("#token"), token))
	h.load("sign in", chromedp.Click(chromedp.CSS("main form button")))
	if got := h.text("h1"); got != "Console" {
		h.t.Fatalf("after signing in the page is %q, want the console's home", got)
	}
}

// TestConsoleInBrowser drives the console in chromium: sign in, search an
// order by its reference and by its buyer's email, switch the time zone,
// download "Export this view" and read the CSV, open the order and see its
// timeline, re-sync it as an operator, have a form without its CSRF token
// refused, and as a viewer find Re-sync disabled and refused by the
// server. Any error a page reports fails it.
func TestConsoleInBrowser(t *testing.T) {
	h := newHeadless(t)
	e, codes := newConsoleEnv(t)

	h.load("open the console", chromedp.Navigate(e.url+"/"))
	if got := h.text("h1"); got != "Sign in" {
		t.Fatalf("the console without a session shows %q, want the sign-in page", got)
	}
	h.shot("sign-in")
	h.signIn(e.url, "ops-token")

	h.load("open Orders", chromedp.Click(chromedp.CSS(`nav a[href="/console/orders"]`)))
	for _, q := range []string{"A-1", sim.DefaultBuyer.Email} {
		h.do("type the search", chromedp.Clear(chromedp.CSS("#q")), chromedp.SendKeys(chromedp.CSS("#q"), q))
		h.load("search "+q, chromedp.Click(chromedp.CSS("form.filters button[type=submit]")))
		rows := h.text("tbody")
		if !strings.Contains(rows, codes[0]) || strings.Contains(rows, codes[1]) {
			t.Errorf("search %q lists %q, want %s alone", q, rows, codes[0])
		}
	}

	// The store's zone by default; UTC once switched, on every page after.
	if created := h.text("tbody time"); strings.HasSuffix(created, "UTC") {
		t.Errorf("a time shows %q in UTC, want the store's zone by default", created)
	}
	h.do("choose UTC", chromedp.SetValue(chromedp.CSS("#zone"), "utc"))
	h.load("switch the zone", chromedp.Click(chromedp.CSS("form.zone button")))
	if created := h.text("tbody time"); !strings.HasSuffix(created, "UTC") {
		t.Errorf("after switching to UTC a time shows %q", created)
	}
	h.do("choose the store's zone", chromedp.SetValue(chromedp.CSS("#zone"), "store"))
	h.load("switch the zone back", chromedp.Click(chromedp.CSS("form.zone button")))

	// Export this view: the paid orders.
	h.do("clear the search", chromedp.Clear(chromedp.CSS("#q")), chromedp.SetValue(chromedp.CSS("#status"), "PAID"))
	h.load("filter by status", chromedp.Click(chromedp.CSS("form.filters button[type=submit]")))
	rows := readCSV(t, h.download(`#exportview`))
	if len(rows) != 2 || !strings.Contains(strings.Join(rows[1], ","), codes[0]) {
		t.Errorf("Export this view of the paid orders: %q, want a header and %s", rows, codes[0])
	}

	h.load("open the order", chromedp.Click(chromedp.CSS(`tbody a[href="/console/orders/`+codes[0]+`?account=default"]`)))
	if tl := h.text("ol.timeline"); !strings.Contains(tl, "PENDING → PAID") || !strings.Contains(tl, "first seen → PENDING") ||
		!strings.Contains(tl, "Document changed") || !strings.Contains(tl, "PAID trigger") {
		t.Errorf("the timeline is %q, want the order's status changes, its document's change and the PAID trigger", tl)
	}
	if body := h.text("main"); !strings.Contains(body, sim.DefaultBuyer.Email) || !strings.Contains(body, "Combo") {
		t.Errorf("the order page lacks its buyer or line items: %q", body)
	}
	h.shot("order")
	h.load("re-sync", chromedp.Click(chromedp.CSS("form.act button")))
	if msg := h.text("main"); !strings.Contains(msg, "Re-synced") {
		t.Errorf("after Re-sync now the page says %q", msg)
	}
	h.shot("order-resynced")

	// The same form without its CSRF token is refused.
	h.do("drop the CSRF token", chromedp.SetAttributeValue(chromedp.CSS(`form.act input[name=csrf]`), "value", ""))
	h.load("re-sync without CSRF", chromedp.Click(chromedp.CSS("form.act button")))
	if body := h.text("body"); !strings.Contains(body, "CSRF token is missing or wrong") {
		t.Errorf("a form without its CSRF token answers %q", body)
	}

	// A narrow screen and the dark scheme, as people use them.
	h.do("narrow, dark", chromedp.EmulateViewport(390, 844), chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		return err
	}))
	h.load("orders on a narrow screen", chromedp.Navigate(e.url+"/console/orders"))
	h.shot("orders-narrow-dark")
	h.do("wide, light", chromedp.EmulateViewport(1280, 860), chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{})
		return err
	}))

	// A viewer: Re-sync is disabled, and the server refuses it anyway.
	h.load("sign out", chromedp.Navigate(e.url+"/console/"))
	h.load("sign out", chromedp.Click(chromedp.CSS("header form button")))
	h.signIn(e.url, "eve-token")
	h.load("open the order as viewer", chromedp.Navigate(e.url+"/console/orders/"+codes[0]))
	if hint := h.text("form.act"); !strings.Contains(hint, "Only an operator") {
		t.Errorf("a viewer's re-sync form says %q", hint)
	}
	disabled, err := chromedp.Run(h.ctx, chromedp.AttributeValue(chromedp.CSS("form.act button"), "disabled"))
	if err != nil || !disabled.Exists {
		t.Errorf("a viewer's Re-sync button is not disabled (%v)", err)
	}
	h.shot("order-viewer")
	h.do("enable the button", chromedp.RemoveAttribute(chromedp.CSS("form.act button"), "disabled"))
	h.load("re-sync as viewer", chromedp.Click(chromedp.CSS("form.act button")))
	if body := h.text("body"); !strings.Contains(body, "viewers read, only operators act") {
		t.Errorf("a viewer's re-sync answers %q", body)
	}
	h.check()
}

// download clicks the link sel and returns the file the browser saved.
func (h *headless) download(sel string) []byte {
	h.t.Helper()
	dir := h.t.TempDir()
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	progress := chromedp.BrowserEvents(ctx, cdpbrowser.DownloadProgress)
	events := true
	if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: &events,
		BrowserContextID: chromedp.FromContext(h.ctx).BrowserContextID}); err != nil {
		h.t.Fatalf("allow downloads: %v", err)
	}
	h.do("click "+sel, chromedp.Click(chromedp.CSS(sel)))
	for ev, err := range progress {
		if err != nil {
			h.t.Fatalf("download %s: %v", sel, err)
		}
		switch ev.State {
		case cdpbrowser.DownloadProgressStateCompleted:
			b, err := os.ReadFile(filepath.Join(dir, ev.GUID))
			if err != nil {
				h.t.Fatal(err)
			}
			h.check()
			return b
		case cdpbrowser.DownloadProgressStateCanceled:
			h.t.Fatalf("download %s was cancelled", sel)
		}
	}
	h.t.Fatalf("download %s: no end", sel)
	return nil
}

func readCSV(t *testing.T, b []byte) [][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(string(b), "\ufeff"))).ReadAll()
	if err != nil {
		t.Fatalf("the export is not CSV: %v\n%s", err, b)
	}
	return rows
}
