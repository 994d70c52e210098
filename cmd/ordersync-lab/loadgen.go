package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/child"
	"github.com/ordersync/ordersync/internal/loadpost"
	"github.com/ordersync/ordersync/internal/rusage"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// Targets of the embedded default on a 2-core machine. End to end there is
// no rate target: on a machine that also runs the load generator and the
// simulator, the pipeline's CPU per order is the figure to hold.
const (
	targetIngestRate = 20000
	targetAckP99     = 10 * time.Millisecond
	targetPeakRSS    = 150 << 20
)

// loadOptions size a load test.
type loadOptions struct {
	// Duration of the ingest phase, at full speed.
	Duration time.Duration
	// Connections post webhooks concurrently, one HTTP connection each.
	Connections int
	// IngestOrders are the orders the ingest webhooks are about.
	IngestOrders int
	// Orders is K of the end-to-end phase.
	Orders int
	// E2ETimeout bounds the wait for the mirror to hold all K.
	E2ETimeout time.Duration
	// Workers is the pipeline's --workers (0: its default).
	Workers int
	// IngestRole is the pipeline's --role during the ingest phase: "all"
	// (the embedded default, workers draining the queue at the same time)
	// or "receiver" (the receiver's own capacity, as in a scale-out
	// deployment where workers run elsewhere).
	IngestRole string
	Keep       bool

	exe string
	env []string
}

func defaultLoadOptions() loadOptions {
	return loadOptions{Duration: 10 * time.Second, Connections: 64, IngestOrders: 20000, Orders: 20000, E2ETimeout: 2 * time.Minute, IngestRole: "all"}
}

func (o loadOptions) validate() error {
	switch {
	case o.Duration <= 0:
		return fmt.Errorf("loadtest: duration must be positive, got %s", o.Duration)
	case o.Connections < 1:
		return fmt.Errorf("loadtest: connections must be ≥ 1, got %d", o.Connections)
	case o.IngestOrders < 1:
		return fmt.Errorf("loadtest: ingest-orders must be ≥ 1, got %d", o.IngestOrders)
	case o.Orders < 1:
		return fmt.Errorf("loadtest: orders must be ≥ 1, got %d", o.Orders)
	case o.E2ETimeout <= 0:
		return fmt.Errorf("loadtest: e2e-timeout must be positive, got %s", o.E2ETimeout)
	case o.Workers < 0:
		return fmt.Errorf("loadtest: workers must not be negative, got %d", o.Workers)
	case o.IngestRole != "all" && o.IngestRole != "receiver":
		return fmt.Errorf("loadtest: ingest-role must be all or receiver, got %q", o.IngestRole)
	case o.exe == "":
		return errors.New("loadtest: no ordersync binary to run")
	}
	return nil
}

func newLoadtestCommand() *cobra.Command {
	opts := defaultLoadOptions()
	cmd := &cobra.Command{
		Use:   "loadtest",
		Short: "Measure the real binary: webhook ingest rate and ack latency, end-to-end orders/s, peak RSS",
		Long: `loadtest starts ordersync serve as a child process (so its own GC settings
apply) against a zero-latency simulator in this process, on loopback only,
and measures two things, each on a fresh pipeline:

  ingest      signed webhooks at full speed from --connections connections
              for --duration: webhooks/s answered 200 and ack latency p50/p99.
              The webhooks are about --ingest-orders orders the simulator
              holds, and carry their orderCode, so the pipeline's workers
              fetch and mirror them while the receiver is loaded.
  end to end  --orders orders created in the simulator, one signed Created
              webhook each (with its orderCode) posted to the pipeline:
              orders/s from the first post until the mirror holds all of
              them, upstream fetches per order, and the pipeline's peak RSS.

It reports the figures against the targets and exits 0 either way.`,
		Args: cobra.NoArgs,
		RunE: withBinary(func(cmd *cobra.Command, exe string) error {
			opts.exe = exe
			rep, err := runLoadtest(cmd.Context(), cmd.OutOrStdout(), opts)
			if err != nil {
				return err
			}
			printLoadReport(cmd.OutOrStdout(), rep)
			return nil
		}),
	}
	f := cmd.Flags()
	f.DurationVar(&opts.Duration, "duration", opts.Duration, "length of the ingest phase")
	f.IntVar(&opts.Connections, "connections", opts.Connections, "concurrent webhook connections")
	f.IntVar(&opts.IngestOrders, "ingest-orders", opts.IngestOrders, "orders the ingest webhooks are about")
	f.StringArrayVar(&opts.env, "child-env", nil, "KEY=VALUE added to the pipeline's environment (repeat), e.g. GOMEMLIMIT=120MiB")
	f.StringVar(&opts.IngestRole, "ingest-role", opts.IngestRole, "the pipeline's role while ingesting: all (workers drain at the same time) or receiver (the receiver alone)")
	f.IntVar(&opts.Orders, "orders", opts.Orders, "orders of the end-to-end phase")
	f.DurationVar(&opts.E2ETimeout, "e2e-timeout", opts.E2ETimeout, "give up waiting for the mirror after this long")
	f.IntVar(&opts.Workers, "workers", 0, "the pipeline's --workers (default: its own default)")
	f.BoolVar(&opts.Keep, "keep", false, "keep the data directories and logs, and print where they are")
	return cmd
}

// ingestReport is what the ingest phase measured.
type ingestReport struct {
	Webhooks, Failed int64 // answered 200; answered otherwise or not at all
	Took             time.Duration
	Rate             float64 // 200 answers per second
	P50, P99, Max    time.Duration
	PeakRSS          int64
	CPU              phaseCPU // per webhook answered 200
}

// e2eReport is what the end-to-end phase measured.
type e2eReport struct {
	Orders          int
	Took            time.Duration // first post → mirror holds all
	Rate            float64       // orders per second over Took
	PostTook        time.Duration // first post → last 200
	Mirrored        int
	FetchesPerOrder float64
	PeakRSS         int64
	CPU             phaseCPU // per order
}

// phaseCPU is the CPU time a phase cost per operation: the pipeline's (the
// child process) and the harness's (this process: load generator and
// simulator), which shares the same cores.
type phaseCPU struct {
	Pipeline, Harness time.Duration
}

// cpuMeter measures phaseCPU from its start.
type cpuMeter struct {
	child               *child.Process
	pipeline0, harness0 time.Duration
}

func startCPUMeter(c *child.Process) (*cpuMeter, error) {
	m := &cpuMeter{child: c}
	var err error
	if m.pipeline0, err = c.CPU(); err != nil {
		return nil, err
	}
	if m.harness0, err = rusage.CPU(); err != nil {
		return nil, err
	}
	return m, nil
}

// per returns the CPU time used since the start, divided by n operations.
func (m *cpuMeter) per(n int64) (phaseCPU, error) {
	if n <= 0 {
		return phaseCPU{}, nil
	}
	pipeline, err := m.child.CPU()
	if err != nil {
		return phaseCPU{}, err
	}
	harness, err := rusage.CPU()
	if err != nil {
		return phaseCPU{}, err
	}
	return phaseCPU{Pipeline: (pipeline - m.pipeline0) / time.Duration(n), Harness: (harness - m.harness0) / time.Duration(n)}, nil
}

type loadReport struct {
	Ingest ingestReport
	E2E    e2eReport
}

// loadPipeline is the simulator and one child pipeline pointed at it.
type loadPipeline struct {
	sim           *sim.Server
	child         *child.Process
	db            *store.DB
	webhookSecret string
}

func startLoadPipeline(ctx context.Context, dir string, opts loadOptions, role string) (*loadPipeline, error) {
	secretKey := app.RandomSecret()
	s, err := sim.New(sim.Config{SecretKey: secretKey, Seed: 1})
	if err != nil {
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	simURL, err := s.Listen("127.0.0.1:0")
	if err != nil {
		s.Close()
		return nil, err
	}
	return startPipelineOn(ctx, s, simURL, secretKey, app.RandomSecret(), dir, opts, role)
}

// startPipelineOn starts the child pipeline on dir/data against a running
// simulator, which the pipeline then owns (Close closes it, also when the
// start fails).
func startPipelineOn(ctx context.Context, s *sim.Server, simURL, secretKey, webhookSecret, dir string, opts loadOptions, role string) (_ *loadPipeline, err error) {
	p := &loadPipeline{sim: s, webhookSecret: webhookSecret}
	// --upstream-rps 0 (serve's default, no fixed cap): the load test
	// sends thousands of fetches a second to a simulator that sets no
	// limit.
	args := []string{"--reconcile-interval", "0", "--upstream-rps", "0", "--log-level", "warn", "--role", role}
	if opts.Workers > 0 {
		args = append(args, "--workers", strconv.Itoa(opts.Workers))
	}
	p.child, err = child.Start(ctx, child.Config{
		Exe: opts.exe, Env: opts.env, DataDir: filepath.Join(dir, "data"), LogPath: filepath.Join(dir, "ordersync.log"),
		APIBaseURL: simURL, SecretKey: secretKey, WebhookSecret: p.webhookSecret, Args: args,
	})
	if err != nil {
		p.sim.Close()
		return nil, err
	}
	migrate := false
	if p.db, err = store.Open(ctx, store.Config{URL: p.child.DatabasePath(), Migrate: &migrate, MaxOpenConns: 1}); err != nil {
		p.Close()
		return nil, fmt.Errorf("open the pipeline's mirror: %w", err)
	}
	return p, nil
}

// Close stops the child with SIGTERM, then the simulator.
func (p *loadPipeline) Close() error {
	var errs []error
	if p.db != nil {
		errs = append(errs, p.db.Close())
	}
	if p.child != nil {
		errs = append(errs, p.child.Stop())
	}
	errs = append(errs, p.sim.Close())
	return errors.Join(errs...)
}

// createOrders puts n orders straight into the simulator.
func (p *loadPipeline) createOrders(n int) ([]ordersync.PaymentLinkResult, error) {
	out := make([]ordersync.PaymentLinkResult, n)
	for i := range out {
		amount := ordersync.MustAmount(fmt.Sprintf("%d.%02d", 5+i%200, i%100))
		res, err := p.sim.CreatePaymentLink(ordersync.PaymentLinkParams{
			OrderReference: fmt.Sprintf("load-%06d", i), Amount: &amount,
		})
		if err != nil {
			return nil, fmt.Errorf("create order %d in the simulator: %w", i, err)
		}
		out[i] = res
	}
	return out, nil
}

// webhookBody is a payment-link event as deployments send it, plus the
// orderCode so the pipeline needs no mapping for orders it did not create.
func webhookBody(o ordersync.PaymentLinkResult, t ordersync.EventType, n int) []byte {
	return fmt.Appendf(nil, `{"orderId":"%s","orderCode":"%s","orderReference":null,"orderType":"FASTLINK_CHARGE","description":"load %d","metadata":null,"level":"Info","type":"%s"}`,
		o.OrderID, o.OrderCode, n, t)
}

func runLoadtest(ctx context.Context, out io.Writer, opts loadOptions) (*loadReport, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ordersync-loadtest-")
	if err != nil {
		return nil, err
	}
	if opts.Keep {
		fmt.Fprintf(out, "data directories and logs under %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	rep := &loadReport{}
	if err := runIngest(ctx, out, filepath.Join(dir, "ingest"), opts, &rep.Ingest); err != nil {
		return nil, err
	}
	if err := runEndToEnd(ctx, out, filepath.Join(dir, "e2e"), opts, &rep.E2E); err != nil {
		return nil, err
	}
	return rep, nil
}

// newWebhookPoster posts webhooks signed with secret to url over conns
// connections.
func newWebhookPoster(url, secret string, conns int) (*loadpost.Poster, error) {
	return loadpost.New(loadpost.Config{
		URL: url, Connections: conns, SignatureHeader: sim.SignatureHeader,
		Sign: func(body []byte) string { return sim.Sign(secret, body) },
	})
}

// posted reports whether a post was answered 200.
func posted(p *loadpost.Poster, body []byte) bool {
	status, err := p.Post(body)
	return err == nil && status == http.StatusOK
}

func runIngest(ctx context.Context, out io.Writer, dir string, opts loadOptions, rep *ingestReport) error {
	lp, err := startLoadPipeline(ctx, dir, opts, opts.IngestRole)
	if err != nil {
		return err
	}
	defer lp.Close()
	orders, err := lp.createOrders(opts.IngestOrders)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "ingest: %d connections for %s to pipeline pid %d, webhooks about %d orders\n", opts.Connections, opts.Duration, lp.child.PID(), len(orders))
	poster, err := newWebhookPoster(lp.child.WebhookURL(), lp.webhookSecret, opts.Connections)
	if err != nil {
		return err
	}
	defer poster.Close()
	types := []ordersync.EventType{ordersync.EventCreated, ordersync.EventUpdated, ordersync.EventRequires3ds, ordersync.EventPaymentError}

	var next, ok, failed atomic.Int64
	latencies := make([][]time.Duration, opts.Connections)
	meter, err := startCPUMeter(lp.child)
	if err != nil {
		return err
	}
	start := time.Now()
	deadline := start.Add(opts.Duration)
	var wg sync.WaitGroup
	for c := range opts.Connections {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 1<<14)
			for ctx.Err() == nil {
				t0 := time.Now()
				if t0.After(deadline) {
					break
				}
				n := int(next.Add(1))
				body := webhookBody(orders[n%len(orders)], types[n%len(types)], n)
				if posted(poster, body) {
					ok.Add(1)
				} else {
					failed.Add(1)
				}
				lat = append(lat, time.Since(t0))
			}
			latencies[c] = lat
		}()
	}
	wg.Wait()
	rep.Took = time.Since(start)
	if err := ctx.Err(); err != nil {
		return err
	}
	all := slices.Concat(latencies...)
	slices.Sort(all)
	rep.Webhooks, rep.Failed = ok.Load(), failed.Load()
	if rep.CPU, err = meter.per(rep.Webhooks); err != nil {
		return err
	}
	rep.Rate = float64(rep.Webhooks) / rep.Took.Seconds()
	rep.P50, rep.P99, rep.Max = quantile(all, 0.50), quantile(all, 0.99), quantile(all, 1)
	if rep.PeakRSS, err = lp.child.PeakRSS(); err != nil {
		return err
	}
	fmt.Fprintf(out, "ingest: %d answered 200 (%d failed) in %.1fs\n", rep.Webhooks, rep.Failed, rep.Took.Seconds())
	return nil
}

// postBodies posts every body over conns connections, each again when
// refused (as the provider would) until ctx ends. It returns the latency
// of every post answered 200, in no order, and how many were refused.
func postBodies(ctx context.Context, poster *loadpost.Poster, bodies [][]byte, conns int) (latencies []time.Duration, refused int64) {
	var next, failed atomic.Int64
	per := make([][]time.Duration, conns)
	var wg sync.WaitGroup
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(bodies) {
					return
				}
				for ctx.Err() == nil {
					t0 := time.Now()
					if posted(poster, bodies[i]) {
						per[c] = append(per[c], time.Since(t0))
						break
					}
					failed.Add(1)
					// Refused: sent again after a pause, as the provider would.
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	return slices.Concat(per...), failed.Load()
}

// quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func runEndToEnd(ctx context.Context, out io.Writer, dir string, opts loadOptions, rep *e2eReport) error {
	lp, err := startLoadPipeline(ctx, dir, opts, "all")
	if err != nil {
		return err
	}
	defer lp.Close()
	orders, err := lp.createOrders(opts.Orders)
	if err != nil {
		return err
	}
	bodies := make([][]byte, len(orders))
	for i, o := range orders {
		bodies[i] = webhookBody(o, ordersync.EventCreated, i)
	}
	fmt.Fprintf(out, "end to end: %d orders, one Created webhook each, %d connections, pipeline pid %d\n", len(orders), opts.Connections, lp.child.PID())
	poster, err := newWebhookPoster(lp.child.WebhookURL(), lp.webhookSecret, opts.Connections)
	if err != nil {
		return err
	}
	defer poster.Close()

	ctx, cancel := context.WithTimeout(ctx, opts.E2ETimeout)
	defer cancel()
	var refused int64
	postDone := make(chan time.Duration, 1)
	meter, err := startCPUMeter(lp.child)
	if err != nil {
		return err
	}
	start := time.Now()
	go func() {
		_, refused = postBodies(ctx, poster, bodies, opts.Connections)
		postDone <- time.Since(start)
	}()

	rep.Mirrored, err = awaitMirrored(ctx, func(ctx context.Context) (int, error) { return countMirrored(ctx, lp.db) }, len(orders), start)
	if err != nil {
		return err
	}
	rep.Took = time.Since(start)
	rep.PostTook = <-postDone
	if rep.Mirrored < len(orders) {
		return fmt.Errorf("end to end: the mirror holds %d of %d orders after %s", rep.Mirrored, len(orders), opts.E2ETimeout)
	}
	rep.Orders = len(orders)
	rep.Rate = float64(rep.Orders) / rep.Took.Seconds()
	if rep.CPU, err = meter.per(int64(rep.Orders)); err != nil {
		return err
	}
	rep.FetchesPerOrder = float64(lp.sim.Stats().Gets) / float64(rep.Orders)
	if rep.PeakRSS, err = lp.child.PeakRSS(); err != nil {
		return err
	}
	if refused > 0 {
		fmt.Fprintf(out, "end to end: %d posts were refused and sent again\n", refused)
	}
	return nil
}

// countMirrored counts the orders the mirror holds a fetched document of.
func countMirrored(ctx context.Context, db *store.DB) (int, error) {
	counts, err := db.CountOrdersByStatus(ctx)
	if err != nil {
		return 0, fmt.Errorf("count mirrored orders: %w", err)
	}
	n := 0
	for status, c := range counts {
		if status != "" { // recorded, not fetched yet
			n += c
		}
	}
	return n, nil
}

// awaitMirrored counts the mirror until it holds total orders or ctx ends,
// and returns the last count that succeeded: a count cut short by the time
// limit says nothing about the mirror, so it does not replace the one
// before it.
func awaitMirrored(ctx context.Context, count func(context.Context) (int, error), total int, start time.Time) (int, error) {
	mirrored := 0
	for {
		n, err := count(ctx)
		switch {
		case err == nil:
			mirrored = n
		case ctx.Err() == nil:
			return mirrored, err
		}
		if mirrored >= total || ctx.Err() != nil {
			return mirrored, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(countInterval(mirrored, total, time.Since(start))):
		}
	}
}

// countInterval is how long the end-to-end phase waits before counting the
// mirror again: an eighth of the time the rest should take at the rate so
// far, within [10ms, 250ms]. Counting scans the orders, so counting every
// few milliseconds throughout took a quarter of a core from the machine
// under test; this way the count is frequent only near the end, where it
// decides the measured time.
func countInterval(mirrored, total int, elapsed time.Duration) time.Duration {
	const least, most = 10 * time.Millisecond, 250 * time.Millisecond
	if mirrored <= 0 || elapsed <= 0 {
		return least
	}
	rest := time.Duration(float64(total-mirrored) / float64(mirrored) * float64(elapsed) / 8)
	return min(max(rest, least), most)
}

func printLoadReport(w io.Writer, r *loadReport) {
	mark := func(ok bool) string {
		if ok {
			return "meets"
		}
		return "MISSES"
	}
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	in, e := r.Ingest, r.E2E
	fmt.Fprintf(w, "\nordersync-lab loadtest (the real binary as a child process, loopback)\n")
	fmt.Fprintf(w, "  ingest                %8.0f webhooks/s   %s the target of ≥ %d/s (%d answered 200, %d failed)\n",
		in.Rate, mark(in.Rate >= targetIngestRate), targetIngestRate, in.Webhooks, in.Failed)
	fmt.Fprintf(w, "  ack latency           p50 %s, p99 %s, max %s   p99 %s the target of ≤ %s\n",
		in.P50.Round(10*time.Microsecond), in.P99.Round(10*time.Microsecond), in.Max.Round(100*time.Microsecond), mark(in.P99 <= targetAckP99), targetAckP99)
	fmt.Fprintf(w, "  end to end            %8.0f orders/s     (%d orders mirrored in %.2fs; posts done in %.2fs)\n",
		e.Rate, e.Orders, e.Took.Seconds(), e.PostTook.Seconds())
	us := func(d time.Duration) string { return fmt.Sprintf("%d µs", d.Microseconds()) }
	fmt.Fprintf(w, "  CPU per webhook       pipeline %s, load generator and simulator %s (ingest)\n", us(in.CPU.Pipeline), us(in.CPU.Harness))
	fmt.Fprintf(w, "  CPU per order         pipeline %s, load generator and simulator %s (end to end; the pipeline's is the figure to hold)\n",
		us(e.CPU.Pipeline), us(e.CPU.Harness))
	fmt.Fprintf(w, "  upstream fetches      %.2f per order\n", e.FetchesPerOrder)
	fmt.Fprintf(w, "  peak RSS              %.0f MB end to end, %.0f MB ingest   %s the target of ≤ %d MB\n",
		mb(e.PeakRSS), mb(in.PeakRSS), mark(max(e.PeakRSS, in.PeakRSS) <= targetPeakRSS), targetPeakRSS>>20)
}
