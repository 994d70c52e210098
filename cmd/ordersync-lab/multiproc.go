package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/child"
	"github.com/ordersync/ordersync/internal/redact"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// multiprocOptions size a multi-process run: the chaos scenario with every
// role in processes of its own against an external NATS and PostgreSQL.
type multiprocOptions struct {
	// Chaos sizes the scenario (orders, seed, down time, convergence
	// promise) and names the binary; its Kills is ignored: one worker and
	// the relay leader are killed.
	Chaos chaosOptions
	// NATSURL and DatabaseURL are the external servers. Each run gets a
	// PostgreSQL schema and a NATS namespace of its own, removed afterwards
	// unless Chaos.Keep.
	NATSURL, DatabaseURL string
	// Receivers, Workers and Relays are the process counts; one reconciler.
	Receivers, Workers, Relays int
	// LeaderTTL is the processes' leader_ttl: the relay failover time.
	LeaderTTL time.Duration
}

func defaultMultiprocOptions() multiprocOptions {
	c := defaultChaosOptions()
	c.Orders, c.Kills = 1000, 2
	return multiprocOptions{Chaos: c, Receivers: 2, Workers: 3, Relays: 2, LeaderTTL: 2 * time.Second}
}

func (o multiprocOptions) validate() error {
	switch {
	case o.NATSURL == "":
		return errors.New("multiproc: an external NATS is required (--nats-url or ORDERSYNC_NATS_URL)")
	case !strings.HasPrefix(o.DatabaseURL, "postgres://") && !strings.HasPrefix(o.DatabaseURL, "postgresql://"):
		return errors.New("multiproc: a PostgreSQL database is required (--database-url or ORDERSYNC_DATABASE_URL, postgres://…)")
	case o.Receivers < 1:
		return fmt.Errorf("multiproc: receivers must be ≥ 1, got %d", o.Receivers)
	case o.Workers < 2:
		return fmt.Errorf("multiproc: workers must be ≥ 2 (one is killed), got %d", o.Workers)
	case o.Relays < 2:
		return fmt.Errorf("multiproc: relays must be ≥ 2 (the leader is killed, a standby takes over), got %d", o.Relays)
	case o.LeaderTTL < 300*time.Millisecond:
		return fmt.Errorf("multiproc: leader-ttl must be ≥ 300ms, got %s", o.LeaderTTL)
	}
	return o.Chaos.validate()
}

func newMultiprocCommand() *cobra.Command {
	opts := defaultMultiprocOptions()
	var throughputOrders int
	cmd := &cobra.Command{
		Use:   "multiproc",
		Short: "The chaos scenario with every role in its own process, on an external NATS and PostgreSQL",
		Long: `multiproc runs the chaos scenario of ` + "`ordersync-lab chaos`" + ` as a scale-out deployment:
--receivers webhook receivers behind a round-robin balancer, --workers worker
processes sharing one durable consumer, --relays outbox relays of which one
leads, and one reconciler, each a separate ordersync serve process against
the external NATS (--nats-url) and PostgreSQL (--database-url), in a fresh
NATS namespace and database schema. The simulator runs in this process with
every fault on. Mid-run it kills one worker with SIGKILL, then the relay
leader (a standby must take over within the lease, --leader-ttl), restarts
both, stops the faults and applies the chaos test's pass conditions.

With --throughput N it instead compares 1 and 3 worker processes (64
fetches in flight each) against the simulator with 50 ms GET latency: N
orders with one webhook each, orders/s until mirrored, upstream fetches
per order.`,
		Args: cobra.NoArgs,
		RunE: withBinary(func(cmd *cobra.Command, exe string) error {
			opts.Chaos.exe = exe
			if opts.NATSURL == "" {
				opts.NATSURL = os.Getenv("ORDERSYNC_NATS_URL")
			}
			if opts.DatabaseURL == "" {
				opts.DatabaseURL = os.Getenv("ORDERSYNC_DATABASE_URL")
			}
			if throughputOrders > 0 {
				_, err := runWorkerScaling(cmd.Context(), cmd.OutOrStdout(), scalingOptions{
					Orders: throughputOrders, ProcessCounts: []int{1, 3}, exe: exe,
					NATSURL: opts.NATSURL, DatabaseURL: opts.DatabaseURL,
				})
				return err
			}
			rep, err := runMultiproc(cmd.Context(), cmd.OutOrStdout(), opts)
			return verdict("multiproc", rep, err)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&opts.NATSURL, "nats-url", "", "external NATS server (default ORDERSYNC_NATS_URL)")
	f.StringVar(&opts.DatabaseURL, "database-url", "", "PostgreSQL URL (default ORDERSYNC_DATABASE_URL); a schema of its own is created in it")
	f.IntVar(&opts.Chaos.Orders, "orders", opts.Chaos.Orders, "orders to create through the pipeline")
	f.Uint64Var(&opts.Chaos.Seed, "seed", opts.Chaos.Seed, "seed of the buyers' choices and the simulator's faults")
	f.DurationVar(&opts.Chaos.Down, "down", opts.Chaos.Down, "how long a killed process stays dead")
	f.DurationVar(&opts.Chaos.ConvergeWithin, "converge-within", opts.Chaos.ConvergeWithin, "fail unless the mirror matches this long after the faults stop")
	f.Float64Var(&opts.Chaos.ReconcileRPS, "reconcile-rps", 0, "the reconciler's budget in upstream requests per second (default: its own default)")
	f.Float64Var(&opts.Chaos.UpstreamRPS, "upstream-rps", 0, "each process's fixed cap on upstream requests per second, 0 = none, serve's default (the rate learned from the 429s)")
	f.BoolVar(&opts.Chaos.Keep, "keep", false, "keep the logs, the schema and the NATS streams, and print where they are")
	f.BoolVar(&opts.Chaos.Verbose, "verbose", false, "log the simulator's warnings to stderr")
	f.IntVar(&opts.Receivers, "receivers", opts.Receivers, "receiver processes")
	f.IntVar(&opts.Workers, "workers", opts.Workers, "worker processes")
	f.IntVar(&opts.Relays, "relays", opts.Relays, "relay processes (one leads)")
	f.DurationVar(&opts.LeaderTTL, "leader-ttl", opts.LeaderTTL, "leader lease of the processes: the relay failover time")
	f.IntVar(&throughputOrders, "throughput", 0, "compare 1 and 3 worker processes on this many orders instead")
	return cmd
}

// proc is one `ordersync serve` process of a fleet.
type proc struct {
	name, role string
	*child.Process
}

// fleetConfig is what every process of a fleet shares.
type fleetConfig struct {
	exe        string
	env        []string
	dir        string // each process's data directory and log under it
	ext        *testenv.Run
	apiBaseURL string
	secretKey  string
	webhookSec string
	args       []string
}

// startFleet starts one process per role, all at once (so migrations and
// stream creation race as they do in a deployment), and waits until each
// is ready. On failure it kills those that started.
func startFleet(ctx context.Context, fc fleetConfig, roles []string) ([]*proc, error) {
	counts := map[string]int{}
	procs := make([]*proc, len(roles))
	errs := make([]error, len(roles))
	var wg sync.WaitGroup
	for i, role := range roles {
		counts[role]++
		name := fmt.Sprintf("%s-%d", strings.ReplaceAll(role, ",", "+"), counts[role])
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := child.Start(ctx, child.Config{
				Exe: fc.exe, DataDir: filepath.Join(fc.dir, name), LogPath: filepath.Join(fc.dir, name+".log"),
				Env: append(append([]string{}, fc.env...),
					"ORDERSYNC_ROLE="+role,
					"ORDERSYNC_NATS_URL="+fc.ext.NATSURL,
					"ORDERSYNC_DATABASE_URL="+fc.ext.DatabaseURL,
					"ORDERSYNC_NATS_NAMESPACE="+fc.ext.Namespace,
				),
				APIBaseURL: fc.apiBaseURL, SecretKey: fc.secretKey, WebhookSecret: fc.webhookSec,
				Args: fc.args,
			})
			if err != nil {
				errs[i] = fmt.Errorf("start %s: %w", name, err)
				return
			}
			procs[i] = &proc{name: name, role: role, Process: c}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, p := range procs {
			if p != nil {
				p.Kill()
			}
		}
		return nil, err
	}
	return procs, nil
}

// withRole returns the processes running role.
func withRole(procs []*proc, role string) []*proc {
	var out []*proc
	for _, p := range procs {
		for _, r := range strings.Split(p.role, ",") {
			if r == role {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// stopFleet stops every running process with SIGTERM, in parallel.
func stopFleet(procs []*proc) error {
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		if p == nil || p.PID() == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Stop(); err != nil {
				errs[i] = fmt.Errorf("%s: %w", p.name, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

var scrapeHTTP = &http.Client{Timeout: 5 * time.Second}

// scrapeMetrics reads a process's /metrics.
func scrapeMetrics(ctx context.Context, p *proc) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.AdminURL()+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := scrapeHTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", p.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: HTTP %d", p.name, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", p.name, err)
	}
	return fams, nil
}

// metricSum adds up a family's counter or gauge series whose labels
// include every pair of want.
func metricSum(fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	fam := fams[name]
	if fam == nil {
		return 0
	}
	total := 0.0
	for _, m := range fam.GetMetric() {
		labels := map[string]string{}
		for _, lp := range m.GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
		match := true
		for i := 0; i+1 < len(want); i += 2 {
			match = match && labels[want[i]] == want[i+1]
		}
		if !match {
			continue
		}
		if c := m.GetCounter(); c != nil {
			total += c.GetValue()
		} else if g := m.GetGauge(); g != nil {
			total += g.GetValue()
		}
	}
	return total
}

// leaderOf waits until exactly one of procs reports it holds role's lease.
func leaderOf(ctx context.Context, procs []*proc, role string, within time.Duration) (*proc, error) {
	deadline := time.Now().Add(within)
	for {
		var leaders []*proc
		for _, p := range procs {
			if p.PID() == 0 {
				continue
			}
			fams, err := scrapeMetrics(ctx, p)
			if err != nil {
				continue // starting or dying: asked again below
			}
			if metricSum(fams, "ordersync_leader", "role", role) == 1 {
				leaders = append(leaders, p)
			}
		}
		if len(leaders) == 1 {
			return leaders[0], nil
		}
		if time.Now().After(deadline) {
			names := make([]string, len(leaders))
			for i, p := range leaders {
				names[i] = p.name
			}
			return nil, fmt.Errorf("no single %s leader after %s: %d lead (%s)", role, within, len(leaders), strings.Join(names, ", "))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// balancer stands for the load balancer in front of the receivers: each
// request goes to the next receiver in turn; a dead one answers 502 and the
// provider retries.
type balancer struct {
	ln      net.Listener
	srv     *http.Server
	targets []*url.URL
	next    atomic.Uint64
	done    chan struct{}
}

func startBalancer(webhookURLs []string) (*balancer, error) {
	b := &balancer{done: make(chan struct{})}
	for _, s := range webhookURLs {
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("balancer target %q: %w", s, err)
		}
		b.targets = append(b.targets, u)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("balancer: %w", err)
	}
	b.ln = ln
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			t := b.targets[int(b.next.Add(1)%uint64(len(b.targets)))]
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.URL.Path = t.Scheme, t.Host, t.Path
			pr.Out.Host = ""
		},
		Transport:    &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) },
	}
	b.srv = &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(b.done)
		_ = b.srv.Serve(ln)
	}()
	return b, nil
}

// URL is the balancer's webhook URL.
func (b *balancer) URL() string { return "http://" + b.ln.Addr().String() + "/webhooks/paymentlink" }

// Close stops the balancer and waits for it.
func (b *balancer) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.srv.Shutdown(ctx); err != nil {
		b.srv.Close()
	}
	<-b.done
}

// multiprocReport is what a multi-process run measured, besides the chaos
// report's figures.
type multiprocReport struct {
	chaosReport
	Processes     []string
	KilledWorker  string
	KilledLeader  string
	NewLeader     string
	Failover      time.Duration // SIGKILL of the relay leader → the standby reports it leads
	WorkerFetches map[string]float64
	// Published is ordersync_outbox_published_total per relay process
	// (since its last start).
	Published map[string]float64
	// EventLogComplete is when every webhook answered 2xx was in the event
	// log, from the moment the faults stopped.
	EventLogComplete time.Duration
	// EventLogWaited is how long the check waited for it (0: complete at
	// the first look, after the mirror and PAID checks).
	EventLogWaited time.Duration
}

// runMultiproc runs the scenario and checks the chaos test's conditions.
func runMultiproc(ctx context.Context, out io.Writer, opts multiprocOptions) (rep *multiprocReport, err error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	ext, err := testenv.New(ctx, opts.NATSURL, opts.DatabaseURL)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ordersync-multiproc-")
	if err != nil {
		return nil, err
	}
	m := &multiprocRun{opts: opts, ext: ext, rep: &multiprocReport{WorkerFetches: map[string]float64{}, Published: map[string]float64{}}}
	m.r = &chaosRun{opts: opts.Chaos, out: out, start: time.Now(), confirmed: map[string]bool{}, orphans: map[ordersync.ID]bool{}}
	m.r.rep.ConvergeWant, m.r.rep.DataDir, m.r.rep.LogPath = opts.Chaos.ConvergeWithin, dir, dir
	defer func() {
		m.rep.chaosReport = m.r.rep
		failed := err != nil || !m.rep.OK()
		if opts.Chaos.Keep {
			fmt.Fprintf(out, "kept: process logs under %s; schema %s and NATS namespace %s\n", dir, ext.Namespace, ext.Namespace)
			return
		}
		if cerr := ext.Close(); cerr != nil {
			fmt.Fprintf(out, "cleanup: %v\n", cerr)
		}
		if failed { // the logs explain a failure
			fmt.Fprintf(out, "kept: process logs under %s\n", dir)
			return
		}
		os.RemoveAll(dir)
	}()
	defer m.tearDown()
	if err := m.setUp(ctx, dir); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "ordersync-lab multiproc: %d orders; %d processes (%s) on NATS %s namespace %s and PostgreSQL schema %s; simulator %s, webhooks via a recording proxy and a round-robin balancer\n",
		opts.Chaos.Orders, len(m.procs), strings.Join(m.rep.Processes, " "), redact.URL(ext.NATSURL), ext.Namespace, ext.Namespace, m.r.simURL)
	fmt.Fprintf(out, "faults: %s\n", describeFaults(chaosFaults()))
	if err := m.drive(ctx); err != nil {
		return m.rep, err
	}
	m.convergeBy = time.Now().Add(opts.Chaos.ConvergeWithin)
	if err := m.r.converge(ctx); err != nil {
		return m.rep, err
	}
	if err := m.check(ctx); err != nil {
		return m.rep, err
	}
	m.tearDown() // a process that does not stop cleanly fails the run
	m.r.rep.Took = time.Since(m.r.start)
	m.rep.chaosReport = m.r.rep
	printMultiprocReport(out, m.rep)
	return m.rep, nil
}

// multiprocRun is the state of one run; the chaos run it wraps holds the
// simulator, the recording proxy and the mirror, with the first receiver
// as its admin API.
type multiprocRun struct {
	opts     multiprocOptions
	ext      *testenv.Run
	r        *chaosRun
	procs    []*proc
	balancer *balancer
	rep      *multiprocReport
	tornDown bool
	// convergeBy is when the promise runs out: the faults stopped plus
	// ConvergeWithin. The event log may complete after the mirror, up to it.
	convergeBy time.Time
}

func (m *multiprocRun) setUp(ctx context.Context, dir string) (err error) {
	r := m.r
	secretKey, webhookSecret := app.RandomSecret(), app.RandomSecret()
	if r.proxy, err = startRecordingProxy(); err != nil {
		return err
	}
	logger := slog.New(slog.DiscardHandler)
	if m.opts.Chaos.Verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if r.sim, err = sim.New(sim.Config{
		SecretKey: secretKey, WebhookSecret: webhookSecret, WebhookURL: r.proxy.URL(),
		WebhookMaxAttempts: 200, Faults: chaosFaults(), Seed: int64(m.opts.Chaos.Seed), Logger: logger,
	}); err != nil {
		return err
	}
	if err := r.sim.Start(ctx); err != nil {
		return err
	}
	if r.simURL, err = r.sim.Listen("127.0.0.1:0"); err != nil {
		return err
	}
	var roles []string
	for range m.opts.Receivers {
		roles = append(roles, "receiver")
	}
	for range m.opts.Workers {
		roles = append(roles, "worker")
	}
	for range m.opts.Relays {
		roles = append(roles, "relay")
	}
	roles = append(roles, "reconciler")
	args := []string{"--upstream-timeout", "5s", "--log-level", "warn", "--upstream-rps", formatRPS(m.opts.Chaos.UpstreamRPS),
		"--leader-ttl", m.opts.LeaderTTL.String(), "--db-max-open-conns", "5", "--db-max-idle-conns", "5"}
	if m.opts.Chaos.ReconcileRPS > 0 {
		args = append(args, "--reconcile-rps", formatRPS(m.opts.Chaos.ReconcileRPS))
	}
	if m.opts.Chaos.AckWait > 0 {
		args = append(args, "--ack-wait", m.opts.Chaos.AckWait.String())
	}
	m.procs, err = startFleet(ctx, fleetConfig{
		exe: m.opts.Chaos.exe, env: m.opts.Chaos.env, dir: dir, ext: m.ext,
		apiBaseURL: r.simURL, secretKey: secretKey, webhookSec: webhookSecret,
		args: args,
	}, roles)
	if err != nil {
		return err
	}
	for _, p := range m.procs {
		m.rep.Processes = append(m.rep.Processes, fmt.Sprintf("%s:%d", p.name, p.PID()))
	}
	var hooks []string
	for _, p := range withRole(m.procs, "receiver") {
		hooks = append(hooks, p.WebhookURL())
	}
	if m.balancer, err = startBalancer(hooks); err != nil {
		return err
	}
	r.proxy.SetTarget(m.balancer.URL())
	// The first receiver's admin API creates the orders and tracks
	// orphans; it is never killed.
	r.child = withRole(m.procs, "receiver")[0].Process
	migrate := false
	if r.db, err = store.Open(ctx, store.Config{URL: m.ext.DatabaseURL, Migrate: &migrate, MaxOpenConns: 2}); err != nil {
		return fmt.Errorf("open the mirror: %w", err)
	}
	return nil
}

// tearDown stops the processes (SIGTERM; an unclean stop is a failure),
// then the harness. It runs once.
func (m *multiprocRun) tearDown() {
	if m.tornDown {
		return
	}
	m.tornDown = true
	if err := stopFleet(m.procs); err != nil {
		m.r.rep.fail("a process did not stop cleanly on SIGTERM: %v", err)
	}
	if m.r.db != nil {
		m.r.db.Close()
	}
	if m.r.sim != nil {
		m.r.sim.Close()
	}
	if m.balancer != nil {
		m.balancer.Close()
	}
	if m.r.proxy != nil {
		m.r.proxy.Close()
	}
}

// drive creates the orders through the first receiver's admin API while
// buyers act, and kills a worker at a third of the creation and the relay
// leader at two thirds.
func (m *multiprocRun) drive(ctx context.Context) error {
	return m.r.driveKilling(ctx, m.killAndRestart)
}

func (m *multiprocRun) waitCreated(ctx context.Context, fraction float64) error {
	threshold := int64(float64(m.r.opts.Orders) * fraction)
	for m.r.created.Load() < threshold {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

func (m *multiprocRun) sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func (m *multiprocRun) killAndRestart(ctx context.Context) error {
	r := m.r
	// A worker dies holding fetched, unacknowledged events: they are
	// redelivered to the others after the consumer's AckWait.
	if err := m.waitCreated(ctx, 1.0/3); err != nil {
		return err
	}
	workers := withRole(m.procs, "worker")
	w := workers[len(workers)/2]
	m.rep.KilledWorker = fmt.Sprintf("%s (pid %d)", w.name, w.PID())
	w.Kill()
	r.rep.Kills = append(r.rep.Kills, time.Since(r.start))
	fmt.Fprintf(r.out, "%5.1fs  kill -9 %s after %d orders; restarting in %s\n", time.Since(r.start).Seconds(), m.rep.KilledWorker, r.created.Load(), r.opts.Down)
	if err := m.sleep(ctx, r.opts.Down); err != nil {
		return err
	}
	if err := w.Restart(ctx); err != nil {
		return fmt.Errorf("restart %s: %w", w.name, err)
	}
	fmt.Fprintf(r.out, "%5.1fs  restarted %s: pid %d, ready\n", time.Since(r.start).Seconds(), w.name, w.PID())

	// The relay leader dies; a standby must take the lease over.
	if err := m.waitCreated(ctx, 2.0/3); err != nil {
		return err
	}
	relays := withRole(m.procs, "relay")
	leader, err := leaderOf(ctx, relays, "relay", 3*m.opts.LeaderTTL)
	if err != nil {
		return err
	}
	m.rep.KilledLeader = fmt.Sprintf("%s (pid %d)", leader.name, leader.PID())
	leader.Kill()
	killed := time.Now()
	r.rep.Kills = append(r.rep.Kills, time.Since(r.start))
	fmt.Fprintf(r.out, "%5.1fs  kill -9 the relay leader %s after %d orders\n", time.Since(r.start).Seconds(), m.rep.KilledLeader, r.created.Load())
	next, err := leaderOf(ctx, relays, "relay", 3*m.opts.LeaderTTL)
	if err != nil {
		return fmt.Errorf("relay failover: %w", err)
	}
	m.rep.Failover, m.rep.NewLeader = time.Since(killed), next.name
	fmt.Fprintf(r.out, "%5.1fs  %s leads the relay, %s after the kill (lease %s)\n", time.Since(r.start).Seconds(), next.name, m.rep.Failover.Round(10*time.Millisecond), m.opts.LeaderTTL)
	if err := m.sleep(ctx, max(0, r.opts.Down-m.rep.Failover)); err != nil {
		return err
	}
	if err := leader.Restart(ctx); err != nil {
		return fmt.Errorf("restart %s: %w", leader.name, err)
	}
	fmt.Fprintf(r.out, "%5.1fs  restarted %s: pid %d, ready (standby)\n", time.Since(r.start).Seconds(), leader.name, leader.PID())
	return nil
}

// check applies the chaos test's conditions, reading the PAID triggers
// from the run's stream on the external NATS and the event log from
// PostgreSQL, and records which processes did the work.
func (m *multiprocRun) check(ctx context.Context) error {
	r, rep := m.r, &m.r.rep
	r.checkMirrorAndSim()
	for _, p := range m.procs {
		if rss, err := p.PeakRSS(); err == nil {
			rep.PeakRSS = max(rep.PeakRSS, rss)
		}
	}
	if err := m.checkPaid(ctx); err != nil {
		return err
	}
	if err := m.checkEventLog(ctx); err != nil {
		return err
	}
	if err := r.checkDeadLetters(ctx); err != nil {
		return err
	}
	// Every worker process fetched, and the relay that took over published.
	for _, p := range withRole(m.procs, "worker") {
		fams, err := scrapeMetrics(ctx, p)
		if err != nil {
			return err
		}
		m.rep.WorkerFetches[p.name] = metricSum(fams, "ordersync_fetch_requests_total")
	}
	busy := 0
	for _, n := range m.rep.WorkerFetches {
		if n > 0 {
			busy++
		}
	}
	if busy < 2 {
		rep.fail("only %d worker processes fetched anything: %v", busy, m.rep.WorkerFetches)
	}
	for _, p := range withRole(m.procs, "relay") {
		fams, err := scrapeMetrics(ctx, p)
		if err != nil {
			return err
		}
		m.rep.Published[p.name] = metricSum(fams, "ordersync_outbox_published_total")
	}
	if m.rep.NewLeader != "" && m.rep.Published[m.rep.NewLeader] == 0 {
		rep.fail("the relay that took over (%s) published nothing", m.rep.NewLeader)
	}
	return nil
}

// checkPaid counts the messages on the run's PAID subject per order, as a
// fulfilment service subscribed to the external NATS would, retrying for a
// few seconds while the relay catches up.
func (m *multiprocRun) checkPaid(ctx context.Context) error {
	return checkPaidTriggers(ctx, m.ext.NATSURL, m.ext.OrdersStream(), m.ext.PaidSubject(), m.r.sim.Orders, &m.r.rep)
}

// checkEventLog requires every webhook a receiver answered 2xx to be in
// the event log in PostgreSQL. A worker logs an event when it applies it,
// and the events a killed worker held come back only after the consumer's
// AckWait (30s), often after the mirror converged through other events of
// the same orders: so the wait runs to the end of the convergence promise.
func (m *multiprocRun) checkEventLog(ctx context.Context) error {
	complete, err := m.r.awaitEventLog(ctx, m.convergeBy, func(ctx context.Context) (uint64, error) {
		return eventsHeld(ctx, m.ext.NATSURL, m.ext.EventsStream(), m.ext.Namespace+"-worker")
	})
	if complete {
		m.rep.EventLogComplete = time.Since(m.convergeBy.Add(-m.opts.Chaos.ConvergeWithin))
		m.rep.EventLogWaited = m.r.rep.EventLogWait
	}
	return err
}

func printMultiprocReport(w io.Writer, rep *multiprocReport) {
	printChaosReport(w, &rep.chaosReport)
	names := func(m map[string]float64) string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s %.0f", k, m[k])
		}
		return strings.Join(parts, ", ")
	}
	fmt.Fprintf(w, "  event log complete            %s after the faults stopped (waited %s for it after the mirror and PAID checks)\n",
		rep.EventLogComplete.Round(10*time.Millisecond), rep.EventLogWaited.Round(10*time.Millisecond))
	fmt.Fprintf(w, "  processes                     %s\n", strings.Join(rep.Processes, " "))
	fmt.Fprintf(w, "  worker killed                 %s\n", rep.KilledWorker)
	fmt.Fprintf(w, "  relay leader killed           %s; %s took over %s later\n", rep.KilledLeader, rep.NewLeader, rep.Failover.Round(10*time.Millisecond))
	fmt.Fprintf(w, "  fetches per worker process    %s (since each one's last start)\n", names(rep.WorkerFetches))
	fmt.Fprintf(w, "  published per relay process   %s (since each one's last start)\n", names(rep.Published))
}

// scalingOptions size the worker-scaling comparison.
type scalingOptions struct {
	Orders        int
	ProcessCounts []int
	// FetchesInFlight is each worker process's --workers; default 64.
	FetchesInFlight int
	// GetLatency is the simulator's latency of every GET; default 50ms.
	GetLatency           time.Duration
	NATSURL, DatabaseURL string
	exe                  string
	env                  []string
}

// scalingResult is one row of the comparison.
type scalingResult struct {
	WorkerProcesses int
	Orders          int
	Took            time.Duration // first webhook posted → the mirror holds all
	Rate            float64       // orders/s over Took
	FetchesPerOrder float64
	PerProcess      []float64 // fetches of each worker process
}

// runWorkerScaling runs the comparison, one fresh deployment per process
// count, and prints a row for each.
func runWorkerScaling(ctx context.Context, out io.Writer, opts scalingOptions) ([]scalingResult, error) {
	if opts.FetchesInFlight == 0 {
		opts.FetchesInFlight = 64
	}
	if opts.GetLatency == 0 {
		opts.GetLatency = 50 * time.Millisecond
	}
	switch {
	case opts.Orders < 1:
		return nil, fmt.Errorf("throughput: orders must be ≥ 1, got %d", opts.Orders)
	case opts.NATSURL == "" || opts.DatabaseURL == "":
		return nil, errors.New("throughput: an external NATS and a PostgreSQL URL are required")
	case opts.exe == "":
		return nil, errors.New("throughput: no ordersync binary to run")
	}
	fmt.Fprintf(out, "worker scaling: %d orders, one Created webhook each; simulator GET latency %s; each worker process %d fetches in flight\n",
		opts.Orders, opts.GetLatency, opts.FetchesInFlight)
	var results []scalingResult
	for _, n := range opts.ProcessCounts {
		res, err := measureWorkers(ctx, opts, n)
		if err != nil {
			return results, fmt.Errorf("%d worker processes: %w", n, err)
		}
		results = append(results, res)
		per := make([]string, len(res.PerProcess))
		for i, f := range res.PerProcess {
			per[i] = strconv.FormatFloat(f, 'f', 0, 64)
		}
		fmt.Fprintf(out, "  %d worker process(es): %7.0f orders/s (%d orders in %.2fs), %.2f upstream fetches per order; fetches per process %s\n",
			n, res.Rate, res.Orders, res.Took.Seconds(), res.FetchesPerOrder, strings.Join(per, "/"))
	}
	return results, nil
}

// measureWorkers starts a deployment with n worker processes (plus one
// receiver+relay process), posts one webhook per order and waits until
// the mirror holds every order.
func measureWorkers(ctx context.Context, opts scalingOptions, n int) (res scalingResult, err error) {
	ext, err := testenv.New(ctx, opts.NATSURL, opts.DatabaseURL)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, ext.Close()) }()
	dir, err := os.MkdirTemp("", "ordersync-scaling-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	secretKey, webhookSecret := app.RandomSecret(), app.RandomSecret()
	s, err := sim.New(sim.Config{SecretKey: secretKey, Seed: 1, Faults: sim.Faults{GetLatency: opts.GetLatency}})
	if err != nil {
		return res, err
	}
	defer s.Close()
	if err := s.Start(ctx); err != nil {
		return res, err
	}
	simURL, err := s.Listen("127.0.0.1:0")
	if err != nil {
		return res, err
	}
	roles := []string{"receiver,relay"}
	for range n {
		roles = append(roles, "worker")
	}
	procs, err := startFleet(ctx, fleetConfig{
		exe: opts.exe, env: opts.env, dir: dir, ext: ext,
		apiBaseURL: simURL, secretKey: secretKey, webhookSec: webhookSecret,
		// No upstream cap: the run measures how many orders a second the
		// workers mirror, thousands, against a simulator that sets no limit.
		args: []string{"--reconcile-interval", "0", "--upstream-rps", "0", "--log-level", "warn", "--workers", strconv.Itoa(opts.FetchesInFlight),
			"--db-max-open-conns", "8", "--db-max-idle-conns", "8"},
	}, roles)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, stopFleet(procs)) }()
	migrate := false
	db, err := store.Open(ctx, store.Config{URL: ext.DatabaseURL, Migrate: &migrate, MaxOpenConns: 1})
	if err != nil {
		return res, fmt.Errorf("open the mirror: %w", err)
	}
	defer db.Close()

	orders, err := (&loadPipeline{sim: s}).createOrders(opts.Orders)
	if err != nil {
		return res, err
	}
	poster, err := newWebhookPoster(procs[0].WebhookURL(), webhookSecret, 64)
	if err != nil {
		return res, err
	}
	defer poster.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var next atomic.Int64
	var posting sync.WaitGroup
	start := time.Now()
	for range 64 {
		posting.Add(1)
		go func() {
			defer posting.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(orders) {
					return
				}
				for !posted(poster, webhookBody(orders[i], ordersync.EventCreated, i)) && ctx.Err() == nil {
					time.Sleep(10 * time.Millisecond) // refused: sent again, as the provider would
				}
			}
		}()
	}
	defer posting.Wait()
	for {
		mirrored, err := countMirrored(ctx, db)
		if err != nil {
			return res, err
		}
		if mirrored >= len(orders) {
			break
		}
		select {
		case <-ctx.Done():
			return res, fmt.Errorf("the mirror holds %d of %d orders: %w", mirrored, len(orders), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	res = scalingResult{WorkerProcesses: n, Orders: len(orders), Took: time.Since(start)}
	res.Rate = float64(res.Orders) / res.Took.Seconds()
	res.FetchesPerOrder = float64(s.Stats().Gets) / float64(res.Orders)
	for _, p := range withRole(procs, "worker") {
		fams, err := scrapeMetrics(ctx, p)
		if err != nil {
			return res, err
		}
		res.PerProcess = append(res.PerProcess, metricSum(fams, "ordersync_fetch_requests_total"))
	}
	return res, nil
}
