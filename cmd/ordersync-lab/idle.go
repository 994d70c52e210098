package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/child"
	"github.com/ordersync/ordersync/internal/datadir"
	"github.com/ordersync/ordersync/internal/loadpost"
	"github.com/ordersync/ordersync/internal/retry"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// idleOptions size an idle measurement.
type idleOptions struct {
	// Dir holds the prepared data directory and the simulator's recipe.
	Dir string
	// Orders is how many open orders the mirror holds.
	Orders int
	// Window is how long the idle process is watched.
	Window time.Duration
	// Settle is the wait between readiness and the window.
	Settle time.Duration
	// PrepareOnly prepares the mirror and stops.
	PrepareOnly bool
	// Perf records where the CPU went with perf(1) over the window.
	Perf bool
	// Steady starts serve on a mirror made to look like one it has run
	// on for hours, past any catch-up (steadyIdle).
	Steady bool

	exe string
	env []string
}

func (o idleOptions) validate() error {
	switch {
	case o.Dir == "":
		return errors.New("idle: --dir is required")
	case o.Orders < 1:
		return fmt.Errorf("idle: orders must be ≥ 1, got %d", o.Orders)
	case o.Window <= 0 && !o.PrepareOnly:
		return fmt.Errorf("idle: window must be positive, got %s", o.Window)
	case o.Settle < 0:
		return fmt.Errorf("idle: settle must not be negative, got %s", o.Settle)
	case o.exe == "":
		return errors.New("idle: no ordersync binary to run")
	}
	return nil
}

func newIdleCommand() *cobra.Command {
	opts := idleOptions{Orders: 10000, Window: 10 * time.Minute, Settle: 30 * time.Second}
	cmd := &cobra.Command{
		Use:   "idle",
		Short: "Measure what ordersync serve costs with open orders and no traffic",
		Long: `idle measures what ordersync serve does when nothing happens: the
embedded default (SQLite, embedded NATS) at its default settings, with
--orders open (PENDING) orders in the mirror and no webhook, for --window.

The first run on a --dir prepares it: the orders are created in a simulator
in this process (with a fixed seed and clock, kept in the directory, so a
later run recreates the same orders) and mirrored by a serve that the run
posts one Created webhook per order to. --prepare-only stops there, so the
preparation can run outside a measurement lock and at a low priority.

The measurement starts serve on the prepared directory with no flags but
the directory and its listeners, waits --settle, then reads over --window:
the process's CPU time (/proc/PID/stat), its threads' context switches
(wake-ups), its goroutines and the JetStream pull requests it sent (from
/metrics), and the reconciler's upstream requests by reason (its due
checks, which cost what they cost: the rest is the idle cost). --perf also
records where the CPU went with perf(1) and prints the top symbols.

Without --steady, serve starts as a receiver restarting after a gap with
every order active in the hour before it: the reconciler checks them all
at its budget (catch_up, then evidence), about 28 minutes for 10,000
orders at 6 a second. --steady measures a serve past that, as an operator
sees one that has run for hours on orders that have been quiet for hours:
before serve starts, the run's directory is changed through the store's
methods (serve itself is not told anything): the orders' history (first
seen, last webhook, last fetched change, last fetch) is moved 3 hours
back, beyond the reconciler's 2-hour evidence window, so that neither
serve's start nor the gap since the preparation brings their checks
forward, and each order's next check is set at an even share of the 52
minutes from now (the quiet tier's interval), where checks every 52
minutes leave orders that became quiet at different times. The
reconciler then makes only its regular quiet checks: about 3.2 a second
for 10,000 orders. The change is made to the directory on every run (a
second run moves the history 3 more hours back): measure a copy of the
prepared one.`,
		Args: cobra.NoArgs,
		RunE: withBinary(func(cmd *cobra.Command, exe string) error {
			opts.exe = exe
			return runIdle(cmd.Context(), cmd.OutOrStdout(), opts)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&opts.Dir, "dir", "", "the prepared directory (prepared when it holds none yet)")
	f.IntVar(&opts.Orders, "orders", opts.Orders, "open orders in the mirror")
	f.DurationVar(&opts.Window, "window", opts.Window, "how long the idle process is measured")
	f.DurationVar(&opts.Settle, "settle", opts.Settle, "wait after serve is ready before the window opens")
	f.BoolVar(&opts.PrepareOnly, "prepare-only", false, "prepare --dir and stop")
	f.BoolVar(&opts.Perf, "perf", false, "record the window with perf(1) and print where the CPU went")
	f.BoolVar(&opts.Steady, "steady", false, "start serve past the catch-up: orders quiet for 3 hours, their next checks spread over 52 minutes (see above)")
	f.StringArrayVar(&opts.env, "child-env", nil, "KEY=VALUE added to serve's environment (repeat)")
	return cmd
}

// idleRecipe is what recreates the prepared orders in a new simulator:
// the same seed and clock give the same codes and documents, so the
// reconciler finds the mirror true.
type idleRecipe struct {
	Orders     int       `json:"orders"`
	Seed       int64     `json:"seed"`
	Clock      time.Time `json:"clock"`
	SecretKey  string    `json:"secretKey"`
	WebhookKey string    `json:"webhookSecret"`
	LastCode   string    `json:"lastCode"`
}

func (r idleRecipe) sim(ctx context.Context) (*sim.Server, string, []ordersync.PaymentLinkResult, error) {
	s, err := sim.New(sim.Config{SecretKey: r.SecretKey, Seed: r.Seed, Clock: func() time.Time { return r.Clock }})
	if err != nil {
		return nil, "", nil, err
	}
	if err := s.Start(ctx); err != nil {
		return nil, "", nil, err
	}
	url, err := s.Listen("127.0.0.1:0")
	if err != nil {
		s.Close()
		return nil, "", nil, err
	}
	orders := make([]ordersync.PaymentLinkResult, r.Orders)
	for i := range orders {
		amount := ordersync.MustAmount(fmt.Sprintf("%d.%02d", 5+i%200, i%100))
		if orders[i], err = s.CreatePaymentLink(ordersync.PaymentLinkParams{OrderReference: fmt.Sprintf("idle-%06d", i), Amount: &amount}); err != nil {
			s.Close()
			return nil, "", nil, fmt.Errorf("create order %d in the simulator: %w", i, err)
		}
	}
	if r.LastCode != "" && orders[len(orders)-1].OrderCode != r.LastCode {
		s.Close()
		return nil, "", nil, fmt.Errorf("the simulator made order code %s where the prepared mirror holds %s: prepare again", orders[len(orders)-1].OrderCode, r.LastCode)
	}
	return s, url, orders, nil
}

func recipePath(dir string) string { return filepath.Join(dir, "idle-recipe.json") }

func runIdle(ctx context.Context, out io.Writer, opts idleOptions) error {
	if err := opts.validate(); err != nil {
		return err
	}
	recipe, err := prepared(ctx, out, opts)
	if err != nil || opts.PrepareOnly {
		return err
	}
	return measureIdle(ctx, out, opts, recipe)
}

// prepared returns the recipe of opts.Dir, preparing the directory first
// when it holds none; idle and mix measure on such a directory.
func prepared(ctx context.Context, out io.Writer, opts idleOptions) (idleRecipe, error) {
	var recipe idleRecipe
	b, err := os.ReadFile(recipePath(opts.Dir))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return prepareIdle(ctx, out, opts)
	case err != nil:
		return recipe, err
	}
	if err := json.Unmarshal(b, &recipe); err != nil {
		return recipe, fmt.Errorf("read %s: %w", recipePath(opts.Dir), err)
	}
	if recipe.Orders != opts.Orders {
		return recipe, fmt.Errorf("%s was prepared with %d orders, not %d", opts.Dir, recipe.Orders, opts.Orders)
	}
	fmt.Fprintf(out, "idle: %s prepared with %d open orders\n", opts.Dir, recipe.Orders)
	return recipe, nil
}

// prepareIdle mirrors opts.Orders new orders into a fresh data directory.
func prepareIdle(ctx context.Context, out io.Writer, opts idleOptions) (idleRecipe, error) {
	r := idleRecipe{Orders: opts.Orders, Seed: 1, Clock: time.Now().UTC().Truncate(time.Millisecond),
		SecretKey: app.RandomSecret(), WebhookKey: app.RandomSecret()}
	s, url, orders, err := r.sim(ctx)
	if err != nil {
		return r, err
	}
	defer s.Close()
	r.LastCode = orders[len(orders)-1].OrderCode
	// Mirroring the orders is the preparation, not the measurement: it
	// runs uncapped (the simulator sets no limit), where serve's default of
	// 8 requests a second would take 20 minutes for 10,000 orders.
	c, err := startIdleServe(ctx, opts, r, url, "--upstream-rps", "0")
	if err != nil {
		return r, err
	}
	defer c.Stop()
	fmt.Fprintf(out, "idle: preparing %s: %d orders, one Created webhook each\n", opts.Dir, len(orders))
	poster, err := newWebhookPoster(c.WebhookURL(), r.WebhookKey, 8)
	if err != nil {
		return r, err
	}
	defer poster.Close()
	if err := postAll(ctx, poster, orders); err != nil {
		return r, err
	}
	migrate := false
	db, err := store.Open(ctx, store.Config{URL: c.DatabasePath(), Migrate: &migrate, MaxOpenConns: 1})
	if err != nil {
		return r, err
	}
	defer db.Close()
	// Posting ends well before the workers do: a millisecond an order
	// more than the posts, for a million orders.
	wait, cancel := context.WithTimeout(ctx, 5*time.Minute+time.Duration(len(orders))*time.Millisecond)
	defer cancel()
	for {
		n, err := countMirrored(wait, db)
		if err != nil {
			return r, fmt.Errorf("idle: wait for the mirror: %w", err)
		}
		if n >= len(orders) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := c.Stop(); err != nil {
		return r, err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return r, err
	}
	if err := os.WriteFile(recipePath(opts.Dir), b, 0o600); err != nil {
		return r, err
	}
	fmt.Fprintf(out, "idle: %s holds %d open orders\n", opts.Dir, len(orders))
	return r, nil
}

// postAll posts one Created webhook per order, again when refused.
func postAll(ctx context.Context, poster *loadpost.Poster, orders []ordersync.PaymentLinkResult) error {
	bodies := make([][]byte, len(orders))
	for i, o := range orders {
		bodies[i] = webhookBody(o, ordersync.EventCreated, i)
	}
	postBodies(ctx, poster, bodies, 8)
	return ctx.Err()
}

// startIdleServe starts serve at its defaults on the prepared directory,
// the measured one with its upstream cap: only the listeners are given,
// and no NATS port, which the default opens none of; args are the
// preparation's further flags.
func startIdleServe(ctx context.Context, opts idleOptions, r idleRecipe, simURL string, args ...string) (*child.Process, error) {
	return child.Start(ctx, child.Config{
		Exe: opts.exe, Env: opts.env, DataDir: filepath.Join(opts.Dir, "data"), LogPath: filepath.Join(opts.Dir, "ordersync.log"),
		APIBaseURL: simURL, SecretKey: r.SecretKey, WebhookSecret: r.WebhookKey, Args: append([]string{"--nats-port", "0"}, args...),
	})
}

// steadyQuietFor is how long before a --steady run the orders were last
// active: past the reconciler's evidence window (worker.DefaultEvidenceWindow),
// which a start tightens, and so past the active tier's hour and the
// catch-up's hour before a gap.
const steadyQuietFor = 3 * time.Hour

// steadyIdle makes the directory's mirror look like one a serve has run
// on for hours (idle's --steady): the orders' history steadyQuietFor
// back, and their next checks spread evenly over the quiet tier's interval
// from now. It goes through the store's methods, not SQL of its own.
func steadyIdle(ctx context.Context, out io.Writer, opts idleOptions, orders []ordersync.PaymentLinkResult, now time.Time) error {
	migrate := false
	db, err := store.Open(ctx, store.Config{URL: datadir.DatabaseFile(filepath.Join(opts.Dir, "data")), Migrate: &migrate, MaxOpenConns: 1})
	if err != nil {
		return fmt.Errorf("idle: open the prepared mirror: %w", err)
	}
	n, err := db.BackdateOrders(ctx, ordersync.DefaultAccount, steadyQuietFor)
	for i := 0; err == nil && i < len(orders); i++ {
		at := now.Add(time.Duration(i) * ordersync.CheckMaxInterval / time.Duration(len(orders)))
		err = db.DeferCheck(ctx, ordersync.DefaultAccount, orders[i].OrderCode, at)
	}
	if err = errors.Join(err, db.Close()); err != nil {
		return fmt.Errorf("idle: steady: %w", err)
	}
	fmt.Fprintf(out, "idle: steady: %d orders last active %s earlier, next checks spread over %s from %s\n",
		n, steadyQuietFor, ordersync.CheckMaxInterval, now.UTC().Format(time.TimeOnly))
	return nil
}

// idleSample is one reading of the process.
type idleSample struct {
	at       time.Time
	cpu      time.Duration
	switches int64 // context switches of every thread
	threads  int
	gets     int64 // upstream GETs the simulator answered
	metrics  map[string]*dto.MetricFamily
}

func sampleIdle(ctx context.Context, c *child.Process, s *sim.Server, cpuFirst bool) (idleSample, error) {
	var smp idleSample
	var err error
	readCPU := func() error {
		smp.at = time.Now()
		if smp.cpu, err = c.CPU(); err != nil {
			return err
		}
		smp.switches, smp.threads, err = contextSwitches(c.PID())
		smp.gets = s.Stats().Gets
		return err
	}
	// The scrape costs CPU of its own: it is made outside the window.
	if cpuFirst {
		if err := readCPU(); err != nil {
			return smp, err
		}
	}
	if smp.metrics, err = scrapeMetrics(ctx, &proc{name: "serve", Process: c}); err != nil {
		return smp, err
	}
	if !cpuFirst {
		err = readCPU()
	}
	return smp, err
}

// contextSwitches adds up the voluntary and involuntary context switches
// of the process's threads: each is a thread going to sleep or being
// woken, so their rate is the wake-ups.
func contextSwitches(pid int) (n int64, threads int, err error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("context switches: %w", err)
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
		if err != nil {
			continue // the thread ended
		}
		threads++
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				x, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += x
			}
		}
	}
	return n, threads, nil
}

func measureIdle(ctx context.Context, out io.Writer, opts idleOptions, r idleRecipe) error {
	s, url, orders, err := r.sim(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	if opts.Steady {
		if err := steadyIdle(ctx, out, opts, orders, time.Now()); err != nil {
			return err
		}
	}
	c, err := startIdleServe(ctx, opts, r, url)
	if err != nil {
		return err
	}
	defer c.Stop()
	fmt.Fprintf(out, "idle: serve pid %d ready; settling %s, then measuring %s\n", c.PID(), opts.Settle, opts.Window)
	if err := retry.Sleep(ctx, opts.Settle); err != nil {
		return err
	}
	var perf *exec.Cmd
	perfData := filepath.Join(opts.Dir, "perf.data")
	if opts.Perf {
		perf = exec.CommandContext(ctx, "perf", "record", "-F", "997", "-g", "-o", perfData, "-p", strconv.Itoa(c.PID()),
			"--", "sleep", strconv.Itoa(int(opts.Window.Seconds())))
		perf.Stderr = io.Discard
		if err := perf.Start(); err != nil {
			return fmt.Errorf("idle: perf: %w", err)
		}
	}
	start, err := sampleIdle(ctx, c, s, false)
	if err != nil {
		return err
	}
	if err := retry.Sleep(ctx, opts.Window); err != nil {
		return err
	}
	end, err := sampleIdle(ctx, c, s, true)
	if err != nil {
		return err
	}
	printIdleReport(out, r, start, end)
	if perf != nil {
		if err := perf.Wait(); err != nil {
			return fmt.Errorf("idle: perf record: %w", err)
		}
		rep := exec.CommandContext(ctx, "perf", "report", "-i", perfData, "--stdio", "--no-children", "--sort", "symbol", "-g", "none", "--percent-limit", "1")
		b, err := rep.Output()
		if err != nil {
			return fmt.Errorf("idle: perf report: %w", err)
		}
		fmt.Fprintf(out, "where the CPU went (perf, symbols over 1%%):\n%s", b)
	}
	return nil
}

func printIdleReport(out io.Writer, r idleRecipe, a, b idleSample) {
	secs := b.at.Sub(a.at).Seconds()
	cpu := b.cpu - a.cpu
	fmt.Fprintf(out, "idle: %d open orders, %s window\n", r.Orders, b.at.Sub(a.at).Round(time.Second))
	fmt.Fprintf(out, "  CPU                 %.2f s (%.2f%% of one core)\n", cpu.Seconds(), 100*cpu.Seconds()/secs)
	fmt.Fprintf(out, "  wake-ups            %.1f/s (context switches of %d threads)\n", float64(b.switches-a.switches)/secs, b.threads)
	fmt.Fprintf(out, "  goroutines          %.0f (start %.0f)\n", metricSum(b.metrics, "go_goroutines"), metricSum(a.metrics, "go_goroutines"))
	pulls := func(stream string) float64 {
		return metricSum(b.metrics, "ordersync_queue_pull_requests_total", "stream", stream) -
			metricSum(a.metrics, "ordersync_queue_pull_requests_total", "stream", stream)
	}
	fmt.Fprintf(out, "  JetStream pulls     %.2f/s events, %.2f/s order events\n", pulls("events")/secs, pulls("orders")/secs)
	fmt.Fprintf(out, "  upstream GETs       %d\n", b.gets-a.gets)
	reasons := map[string]float64{}
	for _, m := range b.metrics["ordersync_reconcile_requests_total"].GetMetric() {
		for _, lp := range m.GetLabel() {
			if reason := lp.GetValue(); lp.GetName() == "reason" {
				reasons[reason] = metricSum(b.metrics, "ordersync_reconcile_requests_total", "reason", reason) -
					metricSum(a.metrics, "ordersync_reconcile_requests_total", "reason", reason)
			}
		}
	}
	names := make([]string, 0, len(reasons))
	total := 0.0
	for k, v := range reasons {
		names = append(names, k)
		total += v
	}
	sort.Strings(names)
	var parts []string
	for _, k := range names {
		if reasons[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, reasons[k]))
		}
	}
	fmt.Fprintf(out, "  reconciler checks   %.0f (%s)\n", total, strings.Join(parts, ", "))
}
