package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/child"
	"github.com/ordersync/ordersync/internal/compare"
	"github.com/ordersync/ordersync/internal/fulfilment"
	"github.com/ordersync/ordersync/internal/redact"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/queue"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// chaosOptions size a chaos run.
type chaosOptions struct {
	Orders int
	Kills  int
	Seed   uint64
	// Down is how long the pipeline stays dead after each kill.
	Down time.Duration
	// ConvergeWithin is the promise: after the faults stop, the mirror
	// matches the simulator within it, or the run fails.
	ConvergeWithin time.Duration
	// ReconcileRPS is the pipeline's --reconcile-rps; 0 leaves its
	// default, which the chaos test is meant to prove.
	ReconcileRPS float64
	// UpstreamRPS is the pipeline's --upstream-rps, always passed; 0 (the
	// flag's default, and serve's) is no fixed cap: the rate is learned
	// from the simulator's 429s.
	UpstreamRPS float64
	// AckWait is the pipeline's --ack-wait; 0 leaves its default
	// (queue.DefaultAckWait). The events the killed pipeline held come
	// back after it, so the event-log check waits for it after the last
	// kill.
	AckWait time.Duration
	// Faults are the simulator's during the run: chaosFaults, unless a
	// test sizes them.
	Faults sim.Faults
	// Endpoint are the fulfilment endpoint's faults: endpointFaults.
	Endpoint fulfilment.Faults
	// DatabaseURL, when set (postgres://…), puts the pipeline's mirror in
	// a PostgreSQL schema of its own, removed afterwards, instead of SQLite.
	DatabaseURL string
	Keep        bool
	Verbose     bool

	// exe and env run the pipeline (tests pass the test binary); args
	// are added to its flags.
	exe  string
	env  []string
	args []string
	// prepare, when set, readies the data directory before the pipeline
	// starts, and its cleanup runs after the pipeline stopped; fault, when
	// set, is the run's fault in place of the kills (diskfull.go).
	prepare func(dataDir string) (cleanup func(), err error)
	fault   func(ctx context.Context, r *chaosRun) error
}

func newChaosCommand() *cobra.Command {
	opts := defaultChaosOptions()
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Kill the pipeline mid-run under upstream faults and prove nothing is wrong or lost",
		Long: `chaos runs the simulator in this process with duplicated, reordered and
dropped webhooks, 5xx and 429 answers and hanging requests, and the whole
pipeline (ordersync serve) as a separate process on a data directory of its
own. It creates orders through the pipeline's admin API, has simulated
buyers pay, cancel, finalize and reverse them, kills the pipeline with
SIGKILL several times mid-run and restarts it, then stops the faults and
waits. It passes only if every simulator order is in the mirror with
identical fields, every PAID transition reached a JetStream consumer exactly
once, every webhook answered 2xx is in the event log, dead letters hold only
genuinely permanent failures, and the mirror converged within
--converge-within after the faults stopped.`,
		Args: cobra.NoArgs,
		RunE: withBinary(func(cmd *cobra.Command, exe string) error {
			opts.exe = exe
			rep, err := runChaos(cmd.Context(), cmd.OutOrStdout(), opts)
			return verdict("chaos", rep, err)
		}),
	}
	f := cmd.Flags()
	f.IntVar(&opts.Orders, "orders", opts.Orders, "orders to create through the pipeline")
	f.IntVar(&opts.Kills, "kills", opts.Kills, "times to kill -9 and restart the pipeline mid-run")
	f.Uint64Var(&opts.Seed, "seed", opts.Seed, "seed of the buyers' choices and the simulator's faults")
	f.DurationVar(&opts.Down, "down", opts.Down, "how long the pipeline stays dead after each kill")
	f.DurationVar(&opts.ConvergeWithin, "converge-within", opts.ConvergeWithin, "fail unless the mirror matches this long after the faults stop")
	f.Float64Var(&opts.ReconcileRPS, "reconcile-rps", 0, "the pipeline's reconcile budget in upstream requests per second (default: its own default)")
	f.Float64Var(&opts.UpstreamRPS, "upstream-rps", 0, "the pipeline's fixed cap on upstream requests per second, 0 = none, serve's default (the rate learned from the 429s)")
	f.StringVar(&opts.DatabaseURL, "database-url", "", "PostgreSQL URL (postgres://…) for the pipeline's mirror, in a schema of its own; default SQLite in the data directory")
	f.BoolVar(&opts.Keep, "keep", false, "keep the data directory and the pipeline's log, and print where they are")
	f.BoolVar(&opts.Verbose, "verbose", false, "log the simulator's warnings to stderr")
	return cmd
}

func defaultChaosOptions() chaosOptions {
	return chaosOptions{Orders: 2000, Kills: 2, Seed: 1, Down: time.Second, ConvergeWithin: 60 * time.Second, Faults: chaosFaults(), Endpoint: endpointFaults()}
}

func (o chaosOptions) validate() error {
	switch {
	case o.Orders < 1:
		return fmt.Errorf("chaos: orders must be ≥ 1, got %d", o.Orders)
	case o.Kills < 0:
		return fmt.Errorf("chaos: kills must be ≥ 0, got %d", o.Kills)
	case o.Down < 0:
		return fmt.Errorf("chaos: down must not be negative, got %s", o.Down)
	case o.UpstreamRPS < 0:
		return fmt.Errorf("chaos: upstream-rps must not be negative, got %v", o.UpstreamRPS)
	case o.DatabaseURL != "" && !strings.HasPrefix(o.DatabaseURL, "postgres://") && !strings.HasPrefix(o.DatabaseURL, "postgresql://"):
		return fmt.Errorf("chaos: database-url must be a PostgreSQL URL (postgres://…), got %q", redact.URL(o.DatabaseURL))
	case o.ReconcileRPS < 0:
		return fmt.Errorf("chaos: reconcile-rps must not be negative (dropped webhooks are only caught by the reconciler), got %v", o.ReconcileRPS)
	case o.ConvergeWithin <= 0:
		return fmt.Errorf("chaos: converge-within must be positive, got %s", o.ConvergeWithin)
	case o.exe == "":
		return errors.New("chaos: no ordersync binary to run")
	}
	return nil
}

// formatRPS is a requests-per-second setting as serve's flag takes it.
func formatRPS(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// chaosFaults are the simulator's faults during the run: every kind of
// upstream trouble at once. Hangs (2s) stay below the pipeline's upstream
// timeout (5s), so they are slow answers, not timeouts.
func chaosFaults() sim.Faults {
	return sim.Faults{
		DuplicateRate: 0.10, ReorderRate: 0.10, ReorderDelay: 500 * time.Millisecond,
		DropRate:        0.05,
		ServerErrorRate: 0.10,
		RateLimitRate:   0.05, RetryAfter: time.Second,
		HangRate: 0.02, HangDuration: 2 * time.Second,
		OtherProductRate: 0.05, SubscriptionRate: 0.02,
	}
}

// chaosReport is what a chaos run measured.
type chaosReport struct {
	// MirrorMatch holds the mirror against the simulator's orders.
	compare.MirrorMatch
	// Unconfirmed are orders the simulator created whose answer never
	// reached the client (the pipeline was killed mid-request); Orphans are
	// those the pipeline never recorded either, followed afterwards with
	// POST /v1/orders/track as an operator would.
	Unconfirmed, Orphans int
	Kills                []time.Duration // when each kill happened, from the start
	CreateRetries        int64

	PaidOrders, PaidTriggers, PaidMissing, PaidDuplicates int

	Acked2xx, AckedMissing int           // distinct webhooks answered 2xx; of those, not in the event log
	EventLogWait           time.Duration // how long the event log check waited for redeliveries
	ProxyAttempts          int64
	ProxyFailures          int64 // attempts answered non-2xx (pipeline down, 503)

	DeadLetters          int
	DeadLettersJustified int
	DeadLetterNotes      []string

	Converged      bool
	ConvergedAfter time.Duration // from SetFaults(Faults{}) to a matching mirror and no webhook pending

	// Deliveries is what the faulty fulfilment endpoint received;
	// DeliveredAfter is from the end of the faults to its last missing
	// event (nothing undelivered).
	Deliveries     fulfilment.Report
	DeliveriesDone bool
	DeliveredAfter time.Duration

	Sim sim.Stats
	// Requests is the pipeline's upstream requests by reason (requestTally).
	Requests map[string]float64
	PeakRSS  int64 // of the last pipeline process
	Took     time.Duration
	Problems []string
	LogPath  string
	DataDir  string
	// KeptSchema is the PostgreSQL schema kept with the data directory.
	KeptSchema   string
	ConvergeWant time.Duration
}

// OK reports whether every guarantee held.
func (r *chaosReport) OK() bool { return len(r.Problems) == 0 }

func (r *chaosReport) fail(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// chaosRun is the state of one run.
type chaosRun struct {
	opts  chaosOptions
	out   io.Writer
	start time.Time

	sim    *sim.Server
	simURL string
	child  *child.Process
	proxy  *recordingProxy
	db     *store.DB
	// pg is the PostgreSQL schema of the mirror (--database-url); nil on
	// SQLite.
	pg      *testenv.Run
	rep     chaosReport
	created atomic.Int64 // orders confirmed to the client
	// hook is the fulfilment endpoint the pipeline delivers to over HTTP,
	// failing a share of the attempts until the faults stop; nil in the
	// multi-process run.
	hook          *fulfilment.Endpoint
	faultsStopped time.Time

	admission admission // wakes the admin API's clients on a success

	mu        sync.Mutex
	confirmed map[string]bool // order codes the admin API answered
	// lastKill is when the pipeline was last killed: events it held
	// unacknowledged come back after the queue's AckWait.
	lastKill time.Time
	// orphans are the ids of orders created upstream that ordersync never
	// recorded (see followOrphans).
	orphans map[ordersync.ID]bool
}

func runChaos(ctx context.Context, out io.Writer, opts chaosOptions) (rep *chaosReport, err error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	r := &chaosRun{opts: opts, out: out, start: time.Now(), confirmed: map[string]bool{}, orphans: map[ordersync.ID]bool{}}
	r.rep.ConvergeWant = opts.ConvergeWithin
	dir, err := os.MkdirTemp("", "ordersync-chaos-")
	if err != nil {
		return nil, err
	}
	r.rep.DataDir, r.rep.LogPath = filepath.Join(dir, "data"), filepath.Join(dir, "ordersync.log")
	defer func() {
		if opts.Keep || (rep != nil && !rep.OK()) || err != nil {
			fmt.Fprintf(out, "kept: data %s, pipeline log %s\n", r.rep.DataDir, r.rep.LogPath)
			if r.rep.KeptSchema != "" {
				fmt.Fprintf(out, "kept: the mirror's PostgreSQL schema %s (DROP SCHEMA %s CASCADE when done)\n", r.rep.KeptSchema, r.rep.KeptSchema)
			}
			return
		}
		os.RemoveAll(dir)
	}()
	if opts.prepare != nil {
		cleanup, err := opts.prepare(r.rep.DataDir)
		if err != nil {
			return nil, err
		}
		defer cleanup()
	}
	if err := r.setUp(ctx); err != nil {
		return nil, err
	}
	defer r.tearDown()
	fmt.Fprintf(out, "ordersync-lab chaos: %d orders, %d kills; simulator %s, pipeline pid %d (webhooks via a recording proxy at %s, admin %s, NATS %s)\n",
		opts.Orders, opts.Kills, r.simURL, r.child.PID(), r.proxy.URL(), r.child.AdminURL(), redact.URL(r.child.NATSURL()))
	fmt.Fprintf(out, "faults: %s\n", describeFaults(opts.Faults))
	fmt.Fprintf(out, "fulfilment endpoint %s: %s\n", r.hook.URL(), describeEndpointFaults(opts.Endpoint))

	var tally requestTally
	tallyCtx, stopTally := context.WithCancel(ctx)
	tallied := make(chan struct{})
	go func() { defer close(tallied); tally.watch(tallyCtx, r.child) }()
	defer func() { stopTally(); <-tallied }()
	if err := r.drive(ctx); err != nil {
		return &r.rep, err
	}
	if err := r.converge(ctx); err != nil {
		return &r.rep, err
	}
	stopTally()
	<-tallied
	r.rep.Requests = tally.total()
	if err := r.check(ctx); err != nil {
		return &r.rep, err
	}
	r.rep.Took = time.Since(r.start)
	printChaosReport(out, &r.rep)
	return &r.rep, nil
}

func (r *chaosRun) setUp(ctx context.Context) (err error) {
	secretKey, webhookSecret := app.RandomSecret(), app.RandomSecret()
	if r.proxy, err = startRecordingProxy(); err != nil {
		return err
	}
	logger := slog.New(slog.DiscardHandler)
	if r.opts.Verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	r.sim, err = sim.New(sim.Config{
		SecretKey: secretKey, WebhookSecret: webhookSecret, WebhookURL: r.proxy.URL(),
		// Webhooks keep being retried (at most 5s apart) while the
		// pipeline is dead: none may be given up during a restart.
		WebhookMaxAttempts: 200,
		Faults:             r.opts.Faults, Seed: int64(r.opts.Seed), Logger: logger,
	})
	if err != nil {
		r.proxy.Close()
		return err
	}
	if err := r.sim.Start(ctx); err != nil {
		r.proxy.Close()
		return err
	}
	if r.simURL, err = r.sim.Listen("127.0.0.1:0"); err != nil {
		r.sim.Close()
		r.proxy.Close()
		return err
	}
	args := append([]string{"--upstream-timeout", "5s", "--log-level", "warn", "--upstream-rps", formatRPS(r.opts.UpstreamRPS)}, r.opts.args...)
	if r.opts.ReconcileRPS > 0 {
		args = append(args, "--reconcile-rps", formatRPS(r.opts.ReconcileRPS))
	}
	if r.opts.AckWait > 0 {
		args = append(args, "--ack-wait", r.opts.AckWait.String())
	}
	env := r.opts.env
	if r.opts.DatabaseURL != "" {
		// NATS stays embedded in the pipeline: only the mirror moves.
		if r.pg, err = testenv.New(ctx, "", r.opts.DatabaseURL); err != nil {
			r.sim.Close()
			r.proxy.Close()
			return err
		}
		env = append(slices.Clip(env), "ORDERSYNC_DATABASE_URL="+r.pg.DatabaseURL)
	}
	r.child, err = child.Start(ctx, child.Config{
		Exe: r.opts.exe, Env: env, DataDir: r.rep.DataDir, LogPath: r.rep.LogPath,
		APIBaseURL: r.simURL, SecretKey: secretKey, WebhookSecret: webhookSecret, Args: args,
	})
	if err != nil {
		r.tearDown()
		return err
	}
	r.proxy.SetTarget(r.child.WebhookURL())
	migrate := false
	mirror := r.child.DatabasePath()
	if r.pg != nil {
		mirror = r.pg.DatabaseURL
	}
	if r.db, err = store.Open(ctx, store.Config{URL: mirror, Migrate: &migrate, MaxOpenConns: 2}); err != nil {
		r.tearDown()
		return fmt.Errorf("open the pipeline's mirror: %w", err)
	}
	ef := r.opts.Endpoint
	ef.Seed = r.opts.Seed
	if r.hook, err = fulfilment.Start(ef); err != nil {
		r.tearDown()
		return err
	}
	if err := r.hook.Register(ctx, &admin.Client{BaseURL: r.child.AdminURL(), HTTP: chaosHTTP}, "the chaos run's faulty fulfilment"); err != nil {
		r.tearDown()
		return fmt.Errorf("add the fulfilment endpoint: %w", err)
	}
	return nil
}

// endpointFaults are the fulfilment endpoint's faults during the run: 5xx
// to 20% of the attempts, 429 with Retry-After to 5%, and 2% held open past
// the pipeline's delivery timeout (10s).
func endpointFaults() fulfilment.Faults {
	return fulfilment.Faults{Error5xx: 0.20, TooMany: 0.05, RetryAfter: 2 * time.Second, Hang: 0.02, HangFor: 15 * time.Second}
}

func describeEndpointFaults(f fulfilment.Faults) string {
	return fmt.Sprintf("5xx %g%%, 429 with Retry-After %s %g%%, hang %g%% (until the sender's timeout) of the attempts",
		f.Error5xx*100, f.RetryAfter, f.TooMany*100, f.Hang*100)
}

func (r *chaosRun) tearDown() {
	if r.hook != nil {
		defer r.hook.Close() // after the pipeline, which may be delivering
	}
	if r.child != nil && r.child.PID() != 0 {
		if err := r.child.Stop(); err != nil {
			r.rep.fail("the pipeline did not stop cleanly on SIGTERM: %v", err)
		}
	}
	if r.db != nil {
		r.db.Close()
	}
	switch {
	case r.pg == nil:
	case r.opts.Keep || !r.rep.OK():
		// Kept with the data directory: the delivery log and the event log
		// are the mirror's.
		r.rep.KeptSchema = r.pg.Namespace
	default:
		if err := r.pg.Close(); err != nil {
			r.rep.fail("remove the mirror's PostgreSQL schema: %v", err)
		}
	}
	if r.sim != nil {
		r.sim.Close()
	}
	if r.proxy != nil {
		r.proxy.Close()
	}
}

// drive creates the orders through the admin API while buyers act on
// them, and kills the pipeline at evenly spaced points of the creation.
func (r *chaosRun) drive(ctx context.Context) error {
	if r.opts.fault != nil {
		return r.driveKilling(ctx, func(ctx context.Context) error { return r.opts.fault(ctx, r) })
	}
	return r.driveKilling(ctx, r.killAndRestart)
}

// driveKilling creates the orders and plays the buyers while kill, in the
// background, kills and restarts the pipeline's processes; the chaos and
// multi-process runs differ only in what they kill.
func (r *chaosRun) driveKilling(ctx context.Context, kill func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	killErr := make(chan error, 1)
	go func() {
		err := kill(ctx)
		if err != nil {
			cancel() // stop creating: the pipeline is not coming back
		}
		killErr <- err
	}()

	rng := rand.New(rand.NewPCG(r.opts.Seed, 0xc4a05))
	var acts sim.BuyerActs
	const batch = 50
	for from := 0; from < r.opts.Orders; from += batch {
		params := make([]ordersync.PaymentLinkParams, min(batch, r.opts.Orders-from))
		for i := range params {
			params[i] = chaosOrderParams(from+i, rng)
		}
		codes, err := r.createOrders(ctx, params)
		if err != nil {
			cancel()
			return errors.Join(<-killErr, err)
		}
		a := r.sim.ActAsBuyers(codes, rng)
		acts = acts.Add(a)
	}
	if err := <-killErr; err != nil {
		return err
	}
	fmt.Fprintf(r.out, "%5.1fs  created %d orders (%d retried requests); buyers: %d paid (%d then finalized, %d reversed), %d cancelled, the rest pending\n",
		time.Since(r.start).Seconds(), r.created.Load(), r.rep.CreateRetries, acts.Paid, acts.Finalized, acts.Reversed, acts.Cancelled)
	return nil
}

// killAndRestart kills the pipeline each time creation passes the next of
// Kills evenly spaced points, keeps it dead for Down, and restarts it.
func (r *chaosRun) killAndRestart(ctx context.Context) error {
	for k := 1; k <= r.opts.Kills; k++ {
		threshold := int64(r.opts.Orders * k / (r.opts.Kills + 1))
		for r.created.Load() < threshold {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
		pid := r.child.PID()
		r.child.Kill()
		r.lastKill = time.Now()
		at := time.Since(r.start)
		r.rep.Kills = append(r.rep.Kills, at)
		fmt.Fprintf(r.out, "%5.1fs  kill -9 pid %d after %d orders; restarting in %s\n", at.Seconds(), pid, r.created.Load(), r.opts.Down)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.opts.Down):
		}
		if err := r.child.Restart(ctx); err != nil {
			return fmt.Errorf("restart after kill %d: %w", k, err)
		}
		r.proxy.SetTarget(r.child.WebhookURL())
		fmt.Fprintf(r.out, "%5.1fs  restarted: pid %d, ready\n", time.Since(r.start).Seconds(), r.child.PID())
	}
	return nil
}

// chaosOrderParams is a back office's order: line items (catalogue SKUs or
// one-time products) or one amount.
func chaosOrderParams(i int, rng *rand.Rand) ordersync.PaymentLinkParams {
	p := ordersync.PaymentLinkParams{OrderReference: fmt.Sprintf("chaos-%05d", i), OrderName: fmt.Sprintf("Chaos order %d", i)}
	products := sim.DefaultProducts()
	if rng.Float64() < 0.6 {
		for j := 0; j < 1+rng.IntN(3); j++ {
			if rng.Float64() < 0.5 {
				p.LineItems = append(p.LineItems, ordersync.LineItemParams{SKU: products[rng.IntN(len(products))].SKU, Quantity: 1 + rng.IntN(3)})
				continue
			}
			price := ordersync.MustAmount(fmt.Sprintf("%d.%02d", 1+rng.IntN(40), rng.IntN(100)))
			p.LineItems = append(p.LineItems, ordersync.LineItemParams{
				Product: &ordersync.ProductParams{Name: fmt.Sprintf("Producto %d", j+1), Price: &price}, Quantity: 1 + rng.IntN(4)})
		}
		return p
	}
	amount := ordersync.MustAmount(fmt.Sprintf("%d.%02d", 5+rng.IntN(200), rng.IntN(100)))
	p.Amount = &amount
	p.Metadata = []ordersync.MetadataEntry{{Name: "channel", Value: "chaos"}}
	return p
}

// createOrders posts each order to the admin API, the whole batch at
// once, retrying while the pipeline is down or the service answers
// 5xx/429.
func (r *chaosRun) createOrders(ctx context.Context, params []ordersync.PaymentLinkParams) ([]string, error) {
	codes := make([]string, len(params))
	errs := make([]error, len(params))
	var wg sync.WaitGroup
	for i := range params {
		wg.Go(func() { codes[i], errs[i] = r.createOrder(ctx, params[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("create payment links: %w", err)
	}
	return codes, nil
}

var chaosHTTP = &http.Client{Timeout: 30 * time.Second}

func (r *chaosRun) createOrder(ctx context.Context, p ordersync.PaymentLinkParams) (string, error) {
	var res ordersync.PaymentLinkResult
	err := retryAdmin(ctx, &r.admission, &r.rep.CreateRetries, func() (int, error) {
		return r.adminCall(ctx, "/v1/payment-links", p, &res)
	})
	if err != nil {
		return "", fmt.Errorf("create %s: %w", p.OrderReference, err)
	}
	r.mu.Lock()
	r.confirmed[res.OrderCode] = true
	r.mu.Unlock()
	r.created.Add(1)
	return res.OrderCode, nil
}

// retryAdmin calls do until it succeeds, retrying transport errors and 5xx
// (the pipeline is down, or the service failed) with capped backoff, or
// at once when another call through adm succeeded meanwhile; any other
// answer is final.
func retryAdmin(ctx context.Context, adm *admission, retries *int64, do func() (status int, err error)) error {
	wait := 50 * time.Millisecond
	deadline := time.Now().Add(2 * time.Minute)
	for {
		through := adm.next()
		status, err := do()
		if err == nil {
			adm.succeeded()
			return nil
		}
		if (status != 0 && status < 500) || time.Now().After(deadline) {
			return err
		}
		atomic.AddInt64(retries, 1)
		t := time.NewTimer(wait/2 + rand.N(wait/2))
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-through:
			t.Stop()
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// admission tells the clients of the admin API that one of them got
// through. The pipeline refuses link creation at once (503) while its
// upstream's Retry-After gate is closed, and under the simulator's 429s
// the gate opens only for moments: clients each waiting out their own
// backoff missed most of them, and creation took most of the run.
type admission struct {
	mu      sync.Mutex
	through chan struct{} // closed by the next success
}

// next is closed when a call next succeeds.
func (a *admission) next() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.through == nil {
		a.through = make(chan struct{})
	}
	return a.through
}

// succeeded wakes every client waiting to retry.
func (a *admission) succeeded() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.through != nil {
		close(a.through)
		a.through = nil
	}
}

// adminCall posts body to the child's admin API and decodes the answer
// into out; status is the answer's, 0 when none came (the child is down).
func (r *chaosRun) adminCall(ctx context.Context, path string, body, out any) (status int, err error) {
	c := &admin.Client{BaseURL: r.child.AdminURL(), HTTP: chaosHTTP}
	err = c.Do(ctx, http.MethodPost, path, body, out)
	var ae *admin.Error
	switch {
	case err == nil:
		return http.StatusOK, nil
	case errors.As(err, &ae):
		return ae.Status, err
	}
	return 0, err
}

// converge stops the faults, follows the orders the simulator created
// while the pipeline was dead mid-request, and waits until the mirror
// matches the simulator and no webhook is pending.
func (r *chaosRun) converge(ctx context.Context) error {
	if err := r.sim.SetFaults(sim.Faults{}); err != nil {
		return err
	}
	if r.hook != nil {
		r.hook.StopFaults()
	}
	stopped := time.Now()
	r.faultsStopped = stopped
	fmt.Fprintf(r.out, "%5.1fs  faults stopped; waiting for the mirror\n", time.Since(r.start).Seconds())
	if err := r.followOrphans(ctx); err != nil {
		return err
	}
	deadline := stopped.Add(r.opts.ConvergeWithin)
	lastPrint := time.Now()
	for {
		r.compareMirror(ctx)
		pending := r.sim.Stats().Webhooks.Pending
		if r.rep.Matching == r.rep.Orders && pending == 0 {
			r.rep.Converged, r.rep.ConvergedAfter = true, time.Since(stopped)
			break
		}
		if time.Now().After(deadline) {
			r.rep.fail("the mirror did not converge within %s after the faults stopped: %d of %d orders match, %d webhooks pending",
				r.opts.ConvergeWithin, r.rep.Matching, r.rep.Orders, pending)
			break
		}
		if time.Since(lastPrint) >= 2*time.Second {
			fmt.Fprintf(r.out, "%5.1fs  mirrored %d/%d, %d match; %d webhooks pending\n",
				time.Since(r.start).Seconds(), r.rep.Mirrored, r.rep.Orders, r.rep.Matching, pending)
			lastPrint = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	if r.rep.Converged {
		fmt.Fprintf(r.out, "%5.1fs  converged: mirrored %d/%d, %d match the simulator\n", time.Since(r.start).Seconds(), r.rep.Mirrored, r.rep.Orders, r.rep.Matching)
	}
	return nil
}

// followOrphans finds the orders the simulator created whose answer the
// client never got, and tracks those the pipeline never recorded either
// (it was killed between the upstream answer and its own commit), the
// way an operator follows orders created elsewhere.
func (r *chaosRun) followOrphans(ctx context.Context) error {
	for _, o := range r.sim.Orders() {
		r.mu.Lock()
		ok := r.confirmed[o.OrderCode]
		r.mu.Unlock()
		if ok {
			continue
		}
		r.rep.Unconfirmed++
		code, err := r.db.ResolveOrderCode(ctx, ordersync.OrderRef{Account: ordersync.DefaultAccount, ID: o.OrderID})
		if err == nil && code == o.OrderCode {
			continue // recorded before the kill: the pipeline follows it itself
		}
		if err != nil && !errors.Is(err, ordersync.ErrNotFound) {
			return fmt.Errorf("resolve order id %s: %w", o.OrderID, err)
		}
		r.rep.Orphans++
		r.orphans[o.OrderID] = true
		var tracked json.RawMessage
		var retries int64
		if err := retryAdmin(ctx, &r.admission, &retries, func() (int, error) {
			return r.adminCall(ctx, "/v1/orders/track", api.TrackRequest{OrderCode: o.OrderCode}, &tracked)
		}); err != nil {
			return fmt.Errorf("track orphan order %s: %w", o.OrderCode, err)
		}
	}
	if r.rep.Unconfirmed > 0 {
		fmt.Fprintf(r.out, "%5.1fs  %d orders created upstream without an answer to the client; %d of them unknown to the pipeline, tracked\n",
			time.Since(r.start).Seconds(), r.rep.Unconfirmed, r.rep.Orphans)
	}
	return nil
}

// compareMirror holds every simulator order against the mirror.
func (r *chaosRun) compareMirror(ctx context.Context) {
	rep := &r.rep
	rep.MirrorMatch = compare.MirrorMatch{}
	for _, want := range r.sim.Orders() {
		got, err := r.db.FindOrderByCode(ctx, ordersync.DefaultAccount, want.OrderCode)
		if err != nil {
			rep.Compare(&want, nil)
			rep.Mismatch(want.OrderCode + ": " + err.Error())
			continue
		}
		rep.Compare(&want, &got.Order)
	}
}

// check verifies the PAID triggers, the event log and the dead letters.
func (r *chaosRun) check(ctx context.Context) error {
	rep := &r.rep
	r.checkMirrorAndSim()
	if rss, err := r.child.PeakRSS(); err == nil {
		rep.PeakRSS = rss
	}
	if err := r.checkPaid(ctx); err != nil {
		return err
	}
	if err := r.checkEventLog(ctx); err != nil {
		return err
	}
	if err := r.checkDeliveries(ctx); err != nil {
		return err
	}
	return r.checkDeadLetters(ctx)
}

// checkMirrorAndSim fails the run for the mismatches left in a mirror that
// did not converge and for any webhook the simulator gave up, and records
// the simulator's stats; the single- and multi-process runs both check it.
func (r *chaosRun) checkMirrorAndSim() {
	rep := &r.rep
	if !rep.Converged {
		for _, m := range rep.Mismatches {
			rep.fail("mismatch: %s", m)
		}
	}
	rep.Sim = r.sim.Stats()
	if rep.Sim.Webhooks.GivenUp > 0 {
		rep.fail("the simulator gave up %d webhooks", rep.Sim.Webhooks.GivenUp)
	}
}

// maxDeliveryWait bounds the wait for the endpoint's last event after the
// faults stopped: longer than a redelivery after AckWait plus the longest
// backoff step the faults leave pending.
const maxDeliveryWait = 3 * time.Minute

// checkDeliveries requires the fulfilment endpoint to have received, after
// deduplication by webhook-id, one order.paid for every PAID trigger on
// JetStream and every order's status changes up to its status upstream, in
// each order's order, signed; duplicates by webhook-id are counted, not
// failed, since a kill can cut off the acknowledgement of a delivery.
func (r *chaosRun) checkDeliveries(ctx context.Context) error {
	js, closeJS, err := connectJetStream(r.child.NATSURL(), "ordersync-lab delivery check")
	if err != nil {
		return err
	}
	defer closeJS()
	triggers, err := queue.CountPerOrder(ctx, js, defaultOrdersStream, ordersync.SubjectPaid)
	if err != nil {
		return err
	}
	statuses := map[string]ordersync.Status{}
	for _, o := range r.sim.Orders() {
		statuses[o.OrderCode] = o.OrderStatus
	}
	waitCtx, cancel := context.WithDeadline(ctx, r.faultsStopped.Add(maxDeliveryWait))
	defer cancel()
	rep := &r.rep
	rep.Deliveries, rep.DeliveriesDone = r.hook.Wait(waitCtx, triggers, statuses)
	rep.DeliveredAfter = time.Since(r.faultsStopped)
	d := rep.Deliveries
	switch {
	case !rep.DeliveriesDone:
		rep.fail("the endpoint still lacks events %s after the faults stopped: order.paid for %d of %d PAID triggers, or an order's last status change", maxDeliveryWait, d.Paid, d.PaidWanted)
	case d.Missing > 0:
		rep.fail("%d PAID triggers never reached the endpoint", d.Missing)
	}
	if d.PaidTwice > 0 {
		rep.fail("%d orders reached the endpoint as order.paid under two webhook-ids", d.PaidTwice)
	}
	if d.OutOfOrder > 0 {
		rep.fail("%d events reached the endpoint before one that precedes them in their order's life", d.OutOfOrder)
	}
	if d.BadSignatures > 0 {
		rep.fail("%d deliveries did not verify", d.BadSignatures)
	}
	return nil
}

func (r *chaosRun) checkPaid(ctx context.Context) error {
	return checkPaidTriggers(ctx, r.child.NATSURL(), defaultOrdersStream, ordersync.SubjectPaid, r.sim.Orders, &r.rep)
}

// checkPaidTriggers reads the PAID subject as a fulfilment service would and
// requires exactly one message for every order PAID or FINALIZED in the
// simulator, and none with more than one, waiting up to 15s for the relay.
func checkPaidTriggers(ctx context.Context, natsURL, stream, subject string, truth func() []ordersync.Order, rep *chaosReport) error {
	js, closeJS, err := connectJetStream(natsURL, "ordersync-lab PAID check")
	if err != nil {
		return err
	}
	defer closeJS()
	deadline := time.Now().Add(15 * time.Second)
	for {
		triggers, err := queue.CountPerOrder(ctx, js, stream, subject)
		if err != nil {
			return err
		}
		rep.PaidOrders, rep.PaidTriggers, rep.PaidMissing, rep.PaidDuplicates = 0, 0, 0, 0
		var examples []string
		for _, o := range truth() {
			n := triggers[o.OrderCode]
			rep.PaidTriggers += n
			if o.OrderStatus.IsPaidState() {
				rep.PaidOrders++
			}
			switch {
			case n > 1:
				rep.PaidDuplicates++
				examples = append(examples, fmt.Sprintf("%s (%s): %d triggers", o.OrderCode, o.OrderStatus, n))
			case n == 0 && o.OrderStatus.IsPaidState():
				rep.PaidMissing++
				examples = append(examples, fmt.Sprintf("%s (%s): no trigger", o.OrderCode, o.OrderStatus))
			}
		}
		if rep.PaidMissing == 0 && rep.PaidDuplicates == 0 {
			return nil
		}
		if time.Now().After(deadline) || rep.PaidDuplicates > 0 {
			rep.fail("PAID triggers: %d missing, %d orders with more than one, e.g. %s",
				rep.PaidMissing, rep.PaidDuplicates, strings.Join(examples[:min(5, len(examples))], "; "))
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// checkEventLog requires every webhook the pipeline answered 2xx to be in
// its event log, read through the store as the admin API reads it.
func (r *chaosRun) checkEventLog(ctx context.Context) error {
	// An event the killed process held unacknowledged is redelivered only
	// after AckWait, maybe well after the mirror converged (a later
	// webhook or the reconciler already brought its order up to date).
	deadline := time.Now().Add(10 * time.Second)
	if !r.lastKill.IsZero() {
		deadline = later(deadline, r.lastKill.Add(r.opts.ackWait()+5*time.Second))
	}
	_, err := r.awaitEventLog(ctx, deadline, func(ctx context.Context) (uint64, error) {
		return eventsHeld(ctx, r.child.NATSURL(), "ORDERSYNC_EVENTS", "ordersync-worker")
	})
	return err
}

// awaitEventLog waits until every webhook the proxy saw answered 2xx is in
// the event log of r.db, and fails the run when some are still missing at
// deadline. It reports whether the log was complete; rep.EventLogWait is
// how long it waited.
//
// An event still held by the queue (held counts them) is not lost, only not
// processed yet: one whose order ordersync did not know when it arrived
// waits out the unresolved schedule (about 50s) before it is logged,
// resolved or dead-lettered. So while the queue holds events, the deadline
// moves on, for at most maxEventLogWait; only a drained queue makes a
// missing event a failure.
func (r *chaosRun) awaitEventLog(ctx context.Context, deadline time.Time, held func(context.Context) (uint64, error)) (bool, error) {
	acked := r.proxy.Acked()
	rep := &r.rep
	rep.Acked2xx = len(acked)
	rep.ProxyAttempts, rep.ProxyFailures = r.proxy.attempts.Load(), r.proxy.failures.Load()
	started := time.Now()
	defer func() { rep.EventLogWait = time.Since(started) }()
	missing := make([]string, 0, len(acked))
	for id := range acked {
		missing = append(missing, id)
	}
	for {
		var err error
		if missing, err = notLogged(ctx, r.db, missing); err != nil {
			return false, err
		}
		rep.AckedMissing = len(missing)
		if len(missing) == 0 {
			return true, nil
		}
		if time.Now().After(deadline) && time.Since(started) < maxEventLogWait {
			if n, err := held(ctx); err == nil && n > 0 {
				deadline = time.Now().Add(time.Second)
			}
		}
		if time.Now().After(deadline) {
			sort.Strings(missing)
			examples := make([]string, 0, 5)
			for _, id := range missing[:min(5, len(missing))] {
				examples = append(examples, id+" "+describeEvent(acked[id]))
			}
			rep.fail("%d webhooks answered 2xx are not in the event log, e.g. %s", len(missing), strings.Join(examples, ", "))
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// describeEvent names a webhook's type and order keys, never its metadata
// (buyer data).
func describeEvent(body []byte) string {
	ev, err := ordersync.ParseEvent(body)
	if err != nil {
		return "(unparsable body)"
	}
	return fmt.Sprintf("(%s %s order id %q reference %q subscription %q)", ev.Type, ev.OrderType, ev.OrderID, ev.OrderReference, ev.SubscriptionID)
}

// maxEventLogWait bounds how long the event-log check waits for events the
// queue still holds: longer than the unresolved schedule plus AckWait.
const maxEventLogWait = 2 * time.Minute

// eventsHeld is how many events the pipeline's queue has not settled yet:
// never delivered, or delivered and waiting for an ack or a redelivery.
func eventsHeld(ctx context.Context, natsURL, stream, consumer string) (uint64, error) {
	h, err := newHeldCounter(natsURL, stream, consumer)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	return h.held(ctx)
}

// heldCounter asks a consumer for eventsHeld over one connection. A check
// that polls keeps one: each new connection costs the pipeline's NATS
// server a password check (bcrypt), which a measuring run would count as
// the pipeline's CPU.
type heldCounter struct {
	js               jetstream.JetStream
	stream, consumer string
	Close            func()
}

func newHeldCounter(natsURL, stream, consumer string) (*heldCounter, error) {
	js, closeJS, err := connectJetStream(natsURL, "ordersync-lab queue check")
	if err != nil {
		return nil, err
	}
	return &heldCounter{js: js, stream: stream, consumer: consumer, Close: closeJS}, nil
}

func (h *heldCounter) held(ctx context.Context) (uint64, error) {
	cons, err := h.js.Consumer(ctx, h.stream, h.consumer)
	if err != nil {
		return 0, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.NumPending + uint64(info.NumAckPending), nil
}

// connectJetStream connects to the pipeline's NATS as a reader beside it;
// closeJS closes the connection.
func connectJetStream(natsURL, name string) (js jetstream.JetStream, closeJS func(), err error) {
	// The pipeline's NATS is on this machine: only a starved machine delays
	// the handshake, and the client's default of 2 s is too short for one.
	nc, err := nats.Connect(natsURL, nats.Name(name), nats.Timeout(15*time.Second))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to NATS: %w", err)
	}
	if js, err = jetstream.New(nc); err != nil {
		nc.Close()
		return nil, nil, err
	}
	return js, nc.Close, nil
}

// ackWait is the pipeline's AckWait: --ack-wait, or serve's default.
func (o chaosOptions) ackWait() time.Duration {
	if o.AckWait > 0 {
		return o.AckWait
	}
	return queue.DefaultAckWait
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// notLogged returns the message ids of ids the event log does not hold.
func notLogged(ctx context.Context, db *store.DB, ids []string) ([]string, error) {
	logged, err := db.LoggedMsgIDs(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read the event log: %w", err)
	}
	var missing []string
	for _, id := range ids {
		if !logged[id] {
			missing = append(missing, id)
		}
	}
	return missing, nil
}

// checkDeadLetters lists every dead letter, replayed ones included. The
// only permanent failure this run can produce is an event of an orphan
// order (created upstream while the pipeline was being killed, so never
// recorded): it could not be resolved until the order was tracked, and
// tracking it must have replayed it. Anything else is a transient failure
// that was wrongly given up.
func (r *chaosRun) checkDeadLetters(ctx context.Context) error {
	letters, err := r.db.ListDeadLetters(ctx, ordersync.DeadLetterFilter{IncludeReplayed: true, Limit: 1000})
	if err != nil {
		return fmt.Errorf("list dead letters: %w", err)
	}
	rep := &r.rep
	rep.DeadLetters = len(letters)
	for _, dl := range letters {
		note := fmt.Sprintf("#%d %s (order id %s, %d attempts): %s", dl.ID, dl.Reason, dl.OrderID, dl.Attempts, dl.LastError)
		if dl.Reason == ordersync.ReasonUnresolved && r.orphans[dl.OrderID] {
			if dl.ReplayedAt == nil {
				rep.DeadLetterNotes = append(rep.DeadLetterNotes, note+" — NOT replayed although its order was tracked")
				rep.fail("dead letter %s: its order was tracked, so it should have been replayed", note)
				continue
			}
			rep.DeadLettersJustified++
			rep.DeadLetterNotes = append(rep.DeadLetterNotes, note+" — justified, and replayed once the order was tracked: it was created upstream while the pipeline was killed mid-request, so ordersync never recorded it")
			continue
		}
		rep.DeadLetterNotes = append(rep.DeadLetterNotes, note+" — NOT a permanent failure")
		rep.fail("dead letter %s", note)
	}
	return nil
}

func printChaosReport(w io.Writer, r *chaosReport) {
	verdict := "PASS"
	if !r.OK() {
		verdict = "FAIL"
	}
	kills := make([]string, len(r.Kills))
	for i, k := range r.Kills {
		kills[i] = fmt.Sprintf("%.1fs", k.Seconds())
	}
	wh := r.Sim.Webhooks
	fmt.Fprintf(w, "\nordersync-lab chaos: %s\n", verdict)
	fmt.Fprintf(w, "  pipeline killed with SIGKILL  %d times (at %s), restarted on the same data directory\n", len(r.Kills), strings.Join(kills, ", "))
	fmt.Fprintf(w, "  orders mirrored               %d of %d, %d identical to the simulator field by field\n", r.Mirrored, r.Orders, r.Matching)
	if r.Converged {
		fmt.Fprintf(w, "  converged                     %s after the faults stopped (promise: %s)\n", r.ConvergedAfter.Round(10*time.Millisecond), r.ConvergeWant)
	} else {
		fmt.Fprintf(w, "  converged                     NO: not within %s after the faults stopped\n", r.ConvergeWant)
	}
	fmt.Fprintf(w, "  orders created mid-kill       %d created upstream without an answer; %d unknown to ordersync, tracked afterwards; %d create requests retried\n", r.Unconfirmed, r.Orphans, r.CreateRetries)
	fmt.Fprintf(w, "  PAID triggers on JetStream    %d for %d orders now PAID or FINALIZED: %d missing, %d orders with more than one\n", r.PaidTriggers, r.PaidOrders, r.PaidMissing, r.PaidDuplicates)
	fmt.Fprintf(w, "  webhooks answered 2xx         %d distinct, %d missing from the event log after waiting %.1fs for redeliveries (%d delivery attempts through the proxy, %d answered non-2xx)\n",
		r.Acked2xx, r.AckedMissing, r.EventLogWait.Seconds(), r.ProxyAttempts, r.ProxyFailures)
	if d := r.Deliveries; d.Attempts > 0 {
		done := "NOT complete"
		if r.DeliveriesDone {
			done = "complete"
		}
		fmt.Fprintf(w, "  delivered over HTTP           %s %s after the faults stopped: order.paid for %d of %d PAID triggers (%d missing, %d under two webhook-ids), %d status changes, %d out of order, %d bad signatures\n",
			done, r.DeliveredAfter.Round(10*time.Millisecond), d.Paid, d.PaidWanted, d.Missing, d.PaidTwice, d.Changes, d.OutOfOrder, d.BadSignatures)
		fmt.Fprintf(w, "  endpoint attempts             %d, %d answered with a fault; %d webhook-ids delivered more than once (%d extra deliveries, deduplicated)\n",
			d.Attempts, d.Injected, d.Duplicates, d.Redelivered)
		if !r.DeliveriesDone || d.OutOfOrder > 0 {
			for _, n := range d.Notes {
				fmt.Fprintf(w, "    %s\n", n)
			}
		}
	}
	fmt.Fprintf(w, "  dead letters                  %d, %d of them justified and replayed\n", r.DeadLetters, r.DeadLettersJustified)
	for _, n := range r.DeadLetterNotes[:min(10, len(r.DeadLetterNotes))] {
		fmt.Fprintf(w, "    %s\n", n)
	}
	perOrder := 0.0
	if r.Orders > 0 {
		perOrder = float64(r.Sim.Gets) / float64(r.Orders)
	}
	fmt.Fprintf(w, "  simulator webhooks            %d events: %d dropped, %d duplicated, %d reordered, %d failed attempts retried, %d given up\n",
		wh.Events, wh.Dropped, wh.Duplicated, wh.Reordered, wh.FailedAttempts, wh.GivenUp)
	fmt.Fprintf(w, "  simulator API faults          %s\n", describeFaultCounts(r.Sim.Faults))
	fmt.Fprintf(w, "  upstream fetches per order    %.2f (%d)\n", perOrder, r.Sim.Gets)
	printRequestBreakdown(w, r.Requests, r.Orders)
	if r.PeakRSS > 0 {
		fmt.Fprintf(w, "  pipeline peak RSS             %.0f MB (last process)\n", float64(r.PeakRSS)/(1<<20))
	}
	fmt.Fprintf(w, "  took                          %.1fs\n", r.Took.Seconds())
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  problem: %s\n", p)
	}
}

func describeFaults(f sim.Faults) string {
	return fmt.Sprintf("%.0f%% duplicated, %.0f%% reordered (%s), %.0f%% dropped webhooks; %.0f%% 5xx, %.0f%% 429 (Retry-After %s), %.0f%% hanging %s API calls; %.0f%% other-product and %.0f%% subscription events",
		100*f.DuplicateRate, 100*f.ReorderRate, f.ReorderDelay, 100*f.DropRate, 100*f.ServerErrorRate, 100*f.RateLimitRate, f.RetryAfter,
		100*f.HangRate, f.HangDuration, 100*f.OtherProductRate, 100*f.SubscriptionRate)
}

func describeFaultCounts(m map[sim.FaultKind]int64) string {
	kinds := make([]string, 0, len(m))
	for k, n := range m {
		if n > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
	}
	sort.Strings(kinds)
	return strings.Join(kinds, ", ")
}
