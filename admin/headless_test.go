package admin_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/ordersync/ordersync/internal/leak"
	"github.com/ordersync/ordersync/internal/testenv/testdb"
)

// Headless Chromium for the browser tests: one browser for the package,
// started by the first test that needs it and stopped by TestMain, and a
// tab for each test at a time that fails it on a console error or a
// refused resource.

// chromium is the browser on the PATH, or the test skips saying so. The
// headless shell comes first: built for automation, without the full
// browser's user interface processes, it costs the browser tests about
// two fifths less CPU than the browser itself (docs/testing.md).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium-headless-shell", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on the PATH (chromium-headless-shell, chromium, chromium-browser): the console's browser tests need it; apt-get install chromium-headless-shell")
	return ""
}

// headless is a tab for t alone in a browser context of its own in the
// chromium the tests share (cookies and cache cleared, as a fresh profile
// had them), and the errors its pages report: uncaught exceptions,
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
	tab, err := tabs.get(sharedChromium(t))
	if err != nil {
		t.Fatalf("open a browser context: %v", err)
	}
	// The test's listener and commands live in a context of its own, so
	// that its end stops them and not the tab.
	ctx, cancel := context.WithCancel(tab.ctx)
	h := &headless{t: t, ctx: ctx}
	t.Cleanup(func() {
		cancel()
		tabs.put(tab)
	})
	if err := chromedp.Listen(ctx, h.watch); err != nil {
		t.Fatal(err)
	}
	return h
}

// tab is a page in a browser context that only it uses. A browser context
// costs chromium a renderer process and about a CPU-second: the tests
// hand their tabs on, each cleared for the next, and open one only when
// every tab is in use.
type tab struct {
	ctx    context.Context
	cancel context.CancelFunc
}

type tabPool struct {
	mu   sync.Mutex
	idle []*tab
}

var tabs tabPool

// get is an idle tab, or a new one, with a blank page, no cookies, no
// cache, and the window size and media the tests expect.
func (p *tabPool) get(browser context.Context) (*tab, error) {
	p.mu.Lock()
	var tb *tab
	if n := len(p.idle); n > 0 {
		tb, p.idle = p.idle[n-1], p.idle[:n-1]
	}
	p.mu.Unlock()
	if tb == nil {
		ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
		tb = &tab{ctx: ctx, cancel: cancel}
		// The first Do opens the tab: it must not carry a timeout.
		if err := chromedp.Do(ctx); err != nil {
			cancel()
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	err := chromedp.Do(ctx, chromedp.Navigate("about:blank"),
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			if _, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
				return err
			}
			if _, err := chromedp.Call(ctx, network.ClearBrowserCache, cdp.Empty{}); err != nil {
				return err
			}
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{})
			return err
		}),
		chromedp.EmulateViewport(1280, 860))
	if err != nil {
		tb.cancel()
		return nil, err
	}
	return tb, nil
}

// put hands tb to the next test: its page goes blank at once, so that no
// script of the last test's pages runs on.
func (p *tabPool) put(tb *tab) {
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		tb.cancel()
		return
	}
	p.mu.Lock()
	p.idle = append(p.idle, tb)
	p.mu.Unlock()
}

// shared is the one chromium of the browser tests, started by the first
// of them and stopped by TestMain: a browser costs about two seconds of
// start.
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
			chromedp.Flag("disable-sync", true),
			// No site isolation, no spare renderer kept waiting and no
			// back/forward cache: every test's pages are of one site
			// (127.0.0.1), so isolating sites buys nothing; no test goes
			// back in its history, so keeping the page left buys nothing
			// either, and the cache makes a navigation swap the tab's
			// renderer for a new one; each extra renderer costs the 2-core
			// machine a process start. The defaults' own two stay off.
			chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,site-per-process,IsolateOrigins,SpareRendererForSitePerProcess,PaintHolding,"+
				"BackForwardCache,ProactivelySwapBrowsingInstance,RenderDocument"))
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
		testdb.Close()
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
	// The browser reports the downloads of every test's context; ours is
	// the one whose file lands in dir, which no other context writes to.
	// A download of ours that is cancelled ends at the deadline.
	for ev, err := range progress {
		if err != nil {
			h.t.Fatalf("download %s: %v", sel, err)
		}
		if ev.State != cdpbrowser.DownloadProgressStateCompleted {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, ev.GUID))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			h.t.Fatal(err)
		}
		h.check()
		return b
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
