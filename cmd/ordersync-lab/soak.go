package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/datadir"
	"github.com/ordersync/ordersync/internal/fulfilment"
	"github.com/ordersync/ordersync/sim"
)

// soakOptions size a soak: a steady mix for Duration, killed every
// KillEvery.
type soakOptions struct {
	Duration time.Duration
	// Rate is the order events (webhooks before duplicates: creations,
	// payments, finalizations, cancellations, reversals) a second; orders
	// are created and acted on at the pace that keeps it.
	Rate      float64
	KillEvery time.Duration
	Sample    time.Duration
	Seed      uint64
	// ConvergeWithin bounds the wait for the mirror after the load stops.
	ConvergeWithin time.Duration
	// WALLimit fails the run when the SQLite WAL ever exceeds it.
	WALLimit int64
	// Flat is how far RSS, descriptors and goroutines may climb over the
	// last two thirds of a process lifetime, half of it in each third
	// (lifetimeOf).
	Flat float64
	// CSV is where the samples go; default soak.csv in the run's directory.
	CSV     string
	AckWait time.Duration
	Keep    bool

	exe string
	env []string
}

func defaultSoakOptions() soakOptions {
	return soakOptions{Duration: time.Hour, Rate: 50, KillEvery: 4 * time.Minute, Sample: 5 * time.Second, Seed: 1,
		ConvergeWithin: 5 * time.Minute, WALLimit: 256 << 20, Flat: 0.25}
}

func newSoakCommand() *cobra.Command {
	opts := defaultSoakOptions()
	var judge string
	cmd := &cobra.Command{
		Use:   "soak",
		Short: "Run the pipeline for hours at a steady mix with periodic kill -9 and sample its resources",
		Long: `soak runs the simulator in this process and the pipeline (ordersync serve)
as a separate process on a data directory of its own, as chaos does, at a
steady mix: orders created through the admin API at the pace that makes
--rate order events a second (paid, some finalized or reversed, some
cancelled), 10% of webhooks duplicated and 5% held back 2s (late), a
fulfilment endpoint that fails a share of its deliveries (chaos's, holding
0.2% of them past the timeout rather than 2%: at 2% the dispatcher's
defaults take about 29 deliveries a second). Every --kill-every
it kills the pipeline with SIGKILL and restarts it. Every --sample it
records the process's RSS, open descriptors, goroutines, the JetStream
store's size, the SQLite file and WAL sizes, the data directory's size and
the pipeline's lag (a CSV, --csv). At the end it stops the load, waits for
the mirror and runs chaos's checks (every order equal to the simulator's,
PAID exactly once, every 2xx webhook logged, no unjustified dead letter,
every delivery made). It fails when a check fails, when the WAL passed
--wal-limit, or when RSS, descriptors or goroutines climb in a process
lifetime: rise by more than half of --flat over its middle third and again
over its last third (the trend of each third's samples, three or more in
each; a step that stays, once, is not a climb). --judge FILE judges an
earlier run's CSV by the same rule, running nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if judge != "" {
				rep, err := judgeSoakCSV(cmd.OutOrStdout(), judge, opts)
				return verdict("soak", rep, err)
			}
			return withBinary(func(cmd *cobra.Command, exe string) error {
				opts.exe = exe
				rep, err := runSoak(cmd.Context(), cmd.OutOrStdout(), opts)
				return verdict("soak", rep, err)
			})(cmd, args)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&opts.Duration, "duration", opts.Duration, "how long the load runs")
	f.Float64Var(&opts.Rate, "rate", opts.Rate, "order events (webhooks before duplicates) a second")
	f.DurationVar(&opts.KillEvery, "kill-every", opts.KillEvery, "kill -9 and restart the pipeline this often (0: never)")
	f.DurationVar(&opts.Sample, "sample", opts.Sample, "sample the pipeline's resources this often")
	f.Uint64Var(&opts.Seed, "seed", opts.Seed, "seed of the buyers' choices and the simulator's faults")
	f.DurationVar(&opts.ConvergeWithin, "converge-within", opts.ConvergeWithin, "fail unless the mirror matches this long after the load stops")
	f.Int64Var(&opts.WALLimit, "wal-limit", opts.WALLimit, "fail when the SQLite WAL exceeds this many bytes (0: no limit)")
	f.Float64Var(&opts.Flat, "flat", opts.Flat, "the climb allowed to RSS, descriptors and goroutines over the last two thirds of a lifetime, half in each third")
	f.StringVar(&opts.CSV, "csv", "", "write the samples here (default: soak.csv beside the pipeline's log, kept)")
	f.BoolVar(&opts.Keep, "keep", false, "keep the data directory and the pipeline's log")
	f.StringVar(&judge, "judge", "", "run nothing: judge the samples of an earlier soak's CSV (lifetimes, --flat, --wal-limit)")
	return cmd
}

func (o soakOptions) validate() error {
	switch {
	case o.Duration <= 0:
		return fmt.Errorf("soak: duration must be positive, got %s", o.Duration)
	case o.Rate <= 0:
		return fmt.Errorf("soak: rate must be positive, got %v", o.Rate)
	case o.KillEvery < 0:
		return fmt.Errorf("soak: kill-every must not be negative, got %s", o.KillEvery)
	case o.Sample <= 0:
		return fmt.Errorf("soak: sample must be positive, got %s", o.Sample)
	case o.Flat <= 0:
		return fmt.Errorf("soak: flat must be positive, got %v", o.Flat)
	case o.exe == "":
		return errors.New("soak: no ordersync binary to run")
	}
	return nil
}

// soakFaults are a production day's webhook faults: duplicates and late
// webhooks, no loss and no upstream failures.
func soakFaults() sim.Faults {
	return sim.Faults{DuplicateRate: 0.10, ReorderRate: 0.05, ReorderDelay: 2 * time.Second}
}

// soakEndpointFaults are the chaos run's endpoint faults with a tenth of
// its hangs. The dispatcher's defaults (8 requests in flight, 10s each at
// most) take about 8/(h·10s·1.4 attempts) deliveries a second from an
// endpoint that holds a share h of the attempts: at the chaos run's 2%,
// about 29, short of the soak's 50 to 60 a second, so its backlog would
// grow all hour; at 0.2% about 290.
func soakEndpointFaults() fulfilment.Faults {
	f := endpointFaults()
	f.Hang /= 10
	return f
}

// soakSample is one sample of the pipeline process.
type soakSample struct {
	At                   time.Duration // from the start
	PID                  int
	RSS                  int64
	FDs                  int
	Goroutines           float64
	JetStream            int64 // the JetStream store's bytes on disk
	DB, WAL              int64
	DataDir              int64
	Orders, Events       int64   // created so far; order events caused so far
	ConsumerPending      float64 // events the workers have not taken yet
	OutboxAge            float64 // seconds the oldest unsent PAID trigger or change waited
	SyncLag              float64 // mean seconds from an event to the mirror since the last sample; -1 unknown
	syncLagSum, syncLagN float64
}

var soakColumns = []string{"seconds", "pid", "rss_bytes", "fds", "goroutines", "jetstream_bytes", "sqlite_bytes", "wal_bytes",
	"datadir_bytes", "orders", "order_events", "consumer_pending", "outbox_oldest_age_s", "sync_lag_mean_s"}

func (s soakSample) row() []string {
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	g := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	return []string{g(s.At.Seconds()), strconv.Itoa(s.PID), i(s.RSS), strconv.Itoa(s.FDs), g(s.Goroutines), i(s.JetStream),
		i(s.DB), i(s.WAL), i(s.DataDir), i(s.Orders), i(s.Events), g(s.ConsumerPending), g(s.OutboxAge), g(s.SyncLag)}
}

// soakLifetime is what one pipeline process did over its life.
type soakLifetime struct {
	PID        int
	From, To   time.Duration
	Samples    int // in the last two thirds
	RSS, FDs   [2]float64
	Goroutines [2]float64
	// Climb is how much RSS, descriptors and goroutines (soakSeries)
	// rose over the middle third, over the last third and over both, as
	// fractions of their level (lifetimeOf); Flat judges it.
	Climb  [3][3]float64
	Flat   bool
	Judged bool // enough samples in both thirds to judge

}

// soakReport is a chaos report (the checks) with the soak's figures.
type soakReport struct {
	*chaosReport
	Samples      []soakSample
	Lifetimes    []soakLifetime
	WALPeak      int64
	DataDirEnd   int64   // after convergence, at rest
	PerThousand  float64 // data dir bytes per 1,000 orders at the end
	GrowthPer1k  float64 // data dir growth per 1,000 orders created, first sample to last
	Created      int64   // orders the load created
	Events       int64
	CSV          string
	LoadDuration time.Duration
}

func runSoak(ctx context.Context, out io.Writer, opts soakOptions) (rep *soakReport, err error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	copts := defaultChaosOptions()
	copts.Seed, copts.ConvergeWithin, copts.AckWait, copts.Faults = opts.Seed, opts.ConvergeWithin, opts.AckWait, soakFaults()
	copts.Endpoint = soakEndpointFaults()
	copts.exe, copts.env, copts.Keep = opts.exe, opts.env, opts.Keep
	r := &chaosRun{opts: copts, out: out, start: time.Now(), confirmed: map[string]bool{}, orphans: map[ordersync.ID]bool{}}
	r.rep.ConvergeWant = opts.ConvergeWithin
	rep = &soakReport{chaosReport: &r.rep}
	dir, err := os.MkdirTemp("", "ordersync-soak-")
	if err != nil {
		return nil, err
	}
	r.rep.DataDir, r.rep.LogPath = filepath.Join(dir, "data"), filepath.Join(dir, "ordersync.log")
	rep.CSV = opts.CSV
	if rep.CSV == "" {
		rep.CSV = filepath.Join(dir, "soak.csv")
	}
	defer func() {
		if opts.Keep || err != nil || rep == nil || !rep.OK() {
			fmt.Fprintf(out, "kept: data %s, pipeline log %s\n", r.rep.DataDir, r.rep.LogPath)
			return
		}
		if opts.CSV == "" {
			// The samples outlive the run: only the data directory goes.
			os.RemoveAll(r.rep.DataDir)
			return
		}
		os.RemoveAll(dir)
	}()
	csvFile, err := os.Create(rep.CSV)
	if err != nil {
		return nil, err
	}
	defer csvFile.Close()
	if err := r.setUp(ctx); err != nil {
		return nil, err
	}
	defer r.tearDown()
	fmt.Fprintf(out, "ordersync-lab soak: %s at %.0f order events/s, kill -9 every %s, a sample every %s; pipeline pid %d, samples in %s\n",
		opts.Duration, opts.Rate, opts.KillEvery, opts.Sample, r.child.PID(), rep.CSV)
	fmt.Fprintf(out, "faults: %s\n", describeFaults(copts.Faults))
	fmt.Fprintf(out, "fulfilment endpoint: %s\n", describeEndpointFaults(copts.Endpoint))

	s := &soakRun{chaosRun: r, opts: opts, rep: rep, csv: csv.NewWriter(csvFile)}
	if err := s.csv.Write(soakColumns); err != nil {
		return rep, err
	}
	if err := s.run(ctx); err != nil {
		return rep, err
	}
	if err := r.converge(ctx); err != nil {
		return rep, err
	}
	if err := r.check(ctx); err != nil {
		return rep, err
	}
	rep.DataDirEnd = dirSize(r.rep.DataDir) // at rest, converged
	s.csv.Flush()
	if err := s.csv.Error(); err != nil {
		return rep, err
	}
	s.judge()
	r.rep.Took = time.Since(r.start)
	printSoakReport(out, rep)
	return rep, nil
}

// soakRun is the state of one soak.
type soakRun struct {
	*chaosRun
	opts soakOptions
	rep  *soakReport
	csv  *csv.Writer

	mu      sync.Mutex
	orders  int64
	events  int64
	lastLag map[int][2]float64 // per pid: the sync lag histogram's sum and count at the last sample
}

// run drives the load, the kills and the sampling for Duration.
func (s *soakRun) run(parent context.Context) error {
	ctx, cancel := context.WithTimeout(parent, s.opts.Duration)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	wg.Go(func() { errs[0] = s.load(parent, ctx.Done()) })
	wg.Go(func() { errs[1] = s.killEvery(ctx) })
	wg.Go(func() {
		for {
			s.sample(ctx)
			select {
			case <-ctx.Done():
				return
			case <-time.After(s.opts.Sample):
			}
		}
	})
	wg.Wait()
	s.rep.LoadDuration = time.Since(s.start)
	for i, err := range errs {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			errs[i] = nil // the soak's end, not a failure
		}
	}
	s.rep.Created, s.rep.Events = s.counts()
	fmt.Fprintf(s.out, "%6.0fs  load stopped: %d orders created, %d order events\n", time.Since(s.start).Seconds(), s.rep.Created, s.rep.Events)
	return errors.Join(errs...)
}

func (s *soakRun) counts() (orders, events int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.orders, s.events
}

// load creates orders in small batches and acts as their buyers, keeping
// the order events caused at Rate a second since the start, until stop.
// A batch under way when stop comes is finished: a creation cut off
// mid-request can leave an order upstream that the pipeline never
// recorded, after the convergence check looked for such orders.
func (s *soakRun) load(ctx context.Context, stop <-chan struct{}) error {
	rng := rand.New(rand.NewPCG(s.opts.Seed, 0x50a4))
	// Events per order: its creation, then sim.ActAsBuyers's mix, 0.6
	// paid (a third then finalized, a tenth reversed) and 0.2 cancelled.
	const perOrder = 1 + 0.6*(1+0.33+0.10) + 0.2
	started := time.Now()
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		orders, events := s.counts()
		behind := s.opts.Rate*time.Since(started).Seconds() - float64(events)
		if behind < 1 {
			select {
			case <-stop:
			case <-time.After(time.Duration((1 - behind) / s.opts.Rate * float64(time.Second))):
			}
			continue
		}
		n := min(50, max(1, int(behind/perOrder)))
		params := make([]ordersync.PaymentLinkParams, n)
		for i := range params {
			params[i] = chaosOrderParams(int(orders)+i, rng)
		}
		codes, err := s.createOrders(ctx, params)
		if err != nil {
			return err
		}
		a := s.sim.ActAsBuyers(codes, rng)
		s.mu.Lock()
		s.orders += int64(len(codes))
		s.events += int64(len(codes) + a.Paid + a.Finalized + a.Reversed + a.Cancelled)
		s.mu.Unlock()
	}
}

// killEvery kills the pipeline with SIGKILL every KillEvery and restarts
// it after Down on the same data directory.
func (s *soakRun) killEvery(ctx context.Context) error {
	if s.opts.KillEvery == 0 {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(s.opts.KillEvery):
		}
		pid := s.child.PID()
		s.child.Kill()
		s.mu.Lock()
		s.lastKill = time.Now()
		s.chaosRun.rep.Kills = append(s.chaosRun.rep.Kills, time.Since(s.start))
		s.mu.Unlock()
		fmt.Fprintf(s.out, "%6.0fs  kill -9 pid %d\n", time.Since(s.start).Seconds(), pid)
		time.Sleep(s.opts.downTime())
		// The restart must not be cut off by the soak's end: a pipeline
		// left dead would fail the checks, not prove anything.
		if err := s.child.Restart(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("restart after the kill of pid %d: %w", pid, err)
		}
		s.proxy.SetTarget(s.child.WebhookURL())
		fmt.Fprintf(s.out, "%6.0fs  restarted: pid %d\n", time.Since(s.start).Seconds(), s.child.PID())
	}
}

func (o soakOptions) downTime() time.Duration { return time.Second }

// sample records the running process's resources, skipping a moment
// when none runs (killed, restarting).
func (s *soakRun) sample(ctx context.Context) {
	pid := s.child.PID()
	if pid == 0 {
		return
	}
	smp := soakSample{At: time.Since(s.start), PID: pid, SyncLag: -1}
	smp.Orders, smp.Events = s.counts()
	var err error
	if smp.RSS, err = procRSS(pid); err != nil {
		return // gone between PID and the read
	}
	if smp.FDs, err = procFDs(pid); err != nil {
		return
	}
	fams, err := scrapeMetrics(ctx, &proc{name: "pipeline", Process: s.child})
	if err != nil || s.child.PID() != pid {
		return
	}
	smp.Goroutines = metricSum(fams, "go_goroutines")
	smp.ConsumerPending = metricSum(fams, "ordersync_consumer_pending_messages")
	smp.OutboxAge = metricSum(fams, "ordersync_outbox_oldest_unsent_age_seconds")
	if fam := fams["ordersync_sync_lag_seconds"]; fam != nil {
		for _, m := range fam.GetMetric() {
			if h := m.GetHistogram(); h != nil {
				smp.syncLagSum += h.GetSampleSum()
				smp.syncLagN += float64(h.GetSampleCount())
			}
		}
	}
	dir := s.chaosRun.rep.DataDir
	smp.JetStream = dirSize(datadir.JetStreamDir(dir))
	smp.DB = fileSize(datadir.DatabaseFile(dir))
	smp.WAL = fileSize(datadir.DatabaseFile(dir) + "-wal")
	smp.DataDir = dirSize(dir)

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastLag == nil {
		s.lastLag = map[int][2]float64{}
	}
	if prev, ok := s.lastLag[pid]; ok && smp.syncLagN > prev[1] {
		smp.SyncLag = (smp.syncLagSum - prev[0]) / (smp.syncLagN - prev[1])
	}
	s.lastLag[pid] = [2]float64{smp.syncLagSum, smp.syncLagN}
	s.rep.Samples = append(s.rep.Samples, smp)
	s.rep.WALPeak = max(s.rep.WALPeak, smp.WAL)
	_ = s.csv.Write(smp.row())
	s.csv.Flush()
}

// minJudged is the fewest samples in each of the middle and the last
// third of a process lifetime that its flatness is judged on: fewer
// cannot tell a trend from a moment.
const minJudged = 3

// judge splits the samples into process lifetimes and judges them, holds
// the WAL to its limit, and works out the data directory's growth.
func (s *soakRun) judge() {
	rep := s.rep
	rep.Lifetimes, rep.WALPeak, rep.GrowthPer1k = judgeSamples(rep.Samples, s.opts, rep.fail)
	orders := int64(len(s.sim.Orders()))
	if orders > 0 {
		rep.PerThousand = float64(rep.DataDirEnd) / float64(orders) * 1000
	}
}

// judgeSamples is the soak's verdict on its samples alone, which a CSV of
// them (soak --judge) gives again: each process lifetime judged by
// lifetimeOf, the WAL's peak against WALLimit, and the data directory's
// growth per 1,000 orders created, first sample to last.
func judgeSamples(samples []soakSample, opts soakOptions, fail func(string, ...any)) (lifetimes []soakLifetime, walPeak int64, growthPer1k float64) {
	for i := 0; i < len(samples); {
		j := i
		for j < len(samples) && samples[j].PID == samples[i].PID {
			j++
		}
		lifetimes = append(lifetimes, lifetimeOf(samples[i:j], opts.Flat))
		i = j
	}
	for _, l := range lifetimes {
		if !l.Judged || l.Flat {
			continue
		}
		for k, name := range soakSeries {
			if c := l.Climb[k]; climbs(c, opts.Flat) {
				fail("pid %d (%.0fs to %.0fs): %s climbed %.0f%% over the middle third and %.0f%% over the last, more than %.1f%% in both, and %.0f%% over the two, more than %.0f%%: a climb, not a step",
					l.PID, l.From.Seconds(), l.To.Seconds(), name, 100*c[0], 100*c[1], 100*opts.Flat/2, 100*c[2], 100*opts.Flat)
			}
		}
	}
	for _, smp := range samples {
		walPeak = max(walPeak, smp.WAL)
	}
	if opts.WALLimit > 0 && walPeak > opts.WALLimit {
		fail("the SQLite WAL reached %.1f MiB, over the limit of %.0f MiB", float64(walPeak)/(1<<20), float64(opts.WALLimit)/(1<<20))
	}
	if len(samples) > 1 {
		first, last := samples[0], samples[len(samples)-1]
		if d := last.Orders - first.Orders; d > 0 {
			growthPer1k = float64(last.DataDir-first.DataDir) / float64(d) * 1000
		}
	}
	return lifetimes, walPeak, growthPer1k
}

// soakSeries names the series a lifetime is judged on, in the order of
// soakLifetime.Climb.
var soakSeries = [3]string{"RSS", "descriptors", "goroutines"}

// lifetimeOf is one process's samples, judged over their last two thirds
// (the first is warm-up). A leak keeps climbing; a step (a connection
// pool opened, deliveries under way) rises once and stays, and requests
// in flight come and go. So each of RSS, descriptors and goroutines is
// a climb only when it rises by more than flat/2 of its level in the
// middle third and again in the last third, and by more than flat over
// the two: each rise is the Theil–Sen slope (the median of the slopes
// between every two samples, which a step or a passing bump hardly
// moves) over the span's length, against the middle third's median.
// Steady growth of flat over the two thirds is a climb; a step, in one
// third or between them, is not, nor are bumps that end each third high.
func lifetimeOf(samples []soakSample, flat float64) soakLifetime {
	l := soakLifetime{PID: samples[0].PID, From: samples[0].At, To: samples[len(samples)-1].At}
	third := (l.To - l.From) / 3
	var at [3][]float64
	var series [3][3][]float64
	for _, smp := range samples {
		t := 0
		switch {
		case smp.At < l.From+third:
			continue
		case smp.At >= l.From+2*third:
			t = 1
		}
		l.Samples++
		for _, t := range []int{t, 2} {
			at[t] = append(at[t], smp.At.Seconds())
			for k, v := range [3]float64{float64(smp.RSS), float64(smp.FDs), smp.Goroutines} {
				series[t][k] = append(series[t][k], v)
			}
		}
	}
	l.Judged = len(at[0]) >= minJudged && len(at[1]) >= minJudged
	l.Flat = true
	for k, p := range []*[2]float64{&l.RSS, &l.FDs, &l.Goroutines} {
		*p = spread(series[2][k])
		if len(series[0][k]) == 0 {
			continue
		}
		level := median(series[0][k])
		if level <= 0 {
			continue
		}
		for t := range 3 {
			span := third
			if t == 2 {
				span = 2 * third
			}
			l.Climb[k][t] = theilSen(at[t], series[t][k]) * span.Seconds() / level
		}
		if climbs(l.Climb[k], flat) {
			l.Flat = false
		}
	}
	return l
}

// climbs judges a series' rises over the middle third, the last third and
// both (lifetimeOf).
func climbs(c [3]float64, flat float64) bool {
	return c[0] > flat/2 && c[1] > flat/2 && c[2] > flat
}

// theilSen is the median of the slopes between every two points with
// different xs; 0 for fewer than two.
func theilSen(xs, ys []float64) float64 {
	var slopes []float64
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			if xs[j] != xs[i] {
				slopes = append(slopes, (ys[j]-ys[i])/(xs[j]-xs[i]))
			}
		}
	}
	if len(slopes) == 0 {
		return 0
	}
	return median(slopes)
}

// spread is the least and the greatest of vs.
func spread(vs []float64) [2]float64 {
	if len(vs) == 0 {
		return [2]float64{}
	}
	return [2]float64{slices.Min(vs), slices.Max(vs)}
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

func printSoakReport(w io.Writer, r *soakReport) {
	printChaosReport(w, r.chaosReport)
	fmt.Fprintf(w, "\nordersync-lab soak: load %.0fs, %d orders created (%d in the simulator), %d order events (%.1f a second); samples in %s\n",
		r.LoadDuration.Seconds(), r.Created, r.Orders, r.Events, float64(r.Events)/max(r.LoadDuration.Seconds(), 1), r.CSV)
	printSoakLifetimes(w, r.Lifetimes)
	printSoakPeaks(w, r.Samples, r.WALPeak)
	fmt.Fprintf(w, "  data dir at rest              %.1f MiB, %.2f MiB per 1,000 orders; grew %.2f MiB per 1,000 orders created under load\n",
		mib(r.DataDirEnd), r.PerThousand/(1<<20), r.GrowthPer1k/(1<<20))
	printSoakVerdict(w, r.Problems)
}

func mib(v int64) float64 { return float64(v) / (1 << 20) }

// printSoakLifetimes is the table of lifetimes: each one's spreads over
// its last two thirds and the climbs it is judged on.
func printSoakLifetimes(w io.Writer, lifetimes []soakLifetime) {
	fmt.Fprintf(w, "  %-7s %-13s %-8s %-17s %-11s %-13s %s\n", "pid", "lifetime", "samples", "RSS MiB", "fds", "goroutines", "climb over the middle, the last third (both)")
	for _, l := range lifetimes {
		var rises []string
		for k, name := range soakSeries {
			c := l.Climb[k]
			rises = append(rises, fmt.Sprintf("%s %+.0f%%, %+.0f%% (%+.0f%%)", name, 100*c[0], 100*c[1], 100*c[2]))
		}
		verdict := "flat: " + strings.Join(rises, "; ")
		switch {
		case !l.Judged:
			verdict = "too short to judge"
		case !l.Flat:
			verdict = "NOT " + verdict
		}
		fmt.Fprintf(w, "  %-7d %-13s %-8d %7.1f–%-8.1f %4.0f–%-6.0f %5.0f–%-7.0f %s\n", l.PID, fmt.Sprintf("%.0f–%.0fs", l.From.Seconds(), l.To.Seconds()), l.Samples,
			l.RSS[0]/(1<<20), l.RSS[1]/(1<<20), l.FDs[0], l.FDs[1], l.Goroutines[0], l.Goroutines[1], verdict)
	}
}

func printSoakPeaks(w io.Writer, samples []soakSample, walPeak int64) {
	var peakLag, peakPending, peakOutbox float64
	var peakJS int64
	for _, s := range samples {
		peakLag, peakPending, peakOutbox = max(peakLag, s.SyncLag), max(peakPending, s.ConsumerPending), max(peakOutbox, s.OutboxAge)
		peakJS = max(peakJS, s.JetStream)
	}
	fmt.Fprintf(w, "  SQLite WAL peak               %.1f MiB\n", mib(walPeak))
	fmt.Fprintf(w, "  JetStream store peak          %.1f MiB\n", mib(peakJS))
	fmt.Fprintf(w, "  pipeline lag peaks            mean sync lag %.2fs over a sample, %.0f events waiting for a worker, oldest unsent outbox message %.1fs\n",
		peakLag, peakPending, peakOutbox)
}

func printSoakVerdict(w io.Writer, problems []string) {
	if len(problems) > 0 {
		fmt.Fprintf(w, "  soak: FAIL (%s)\n", strings.Join(problems, "; "))
		return
	}
	fmt.Fprintln(w, "  soak: PASS")
}

// judgeSoakCSV judges the samples of a soak's CSV as the soak judges its
// own (lifetimes, the WAL's limit), without the checks of the mirror,
// which only the run itself can make: a run's samples can be judged again
// by a later rule.
func judgeSoakCSV(w io.Writer, path string, opts soakOptions) (*chaosReport, error) {
	samples, err := readSoakCSV(path)
	if err != nil {
		return nil, err
	}
	rep := &chaosReport{}
	lifetimes, walPeak, growth := judgeSamples(samples, opts, rep.fail)
	fmt.Fprintf(w, "ordersync-lab soak --judge %s: %d samples, %d process lifetimes\n", path, len(samples), len(lifetimes))
	printSoakLifetimes(w, lifetimes)
	printSoakPeaks(w, samples, walPeak)
	fmt.Fprintf(w, "  data dir                      grew %.2f MiB per 1,000 orders created under load\n", growth/(1<<20))
	printSoakVerdict(w, rep.Problems)
	return rep, nil
}

// readSoakCSV reads the samples a soak wrote, by the names in its header.
func readSoakCSV(path string) ([]soakSample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("read %s: empty", path)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, name := range soakColumns {
		if _, ok := col[name]; !ok {
			return nil, fmt.Errorf("read %s: no column %q in its header", path, name)
		}
	}
	samples := make([]soakSample, 0, len(rows)-1)
	for n, row := range rows[1:] {
		var smp soakSample
		var errs []error
		num := func(name string) float64 {
			v, err := strconv.ParseFloat(row[col[name]], 64)
			errs = append(errs, err)
			return v
		}
		smp.At = time.Duration(num("seconds") * float64(time.Second))
		smp.PID = int(num("pid"))
		smp.RSS, smp.FDs, smp.Goroutines = int64(num("rss_bytes")), int(num("fds")), num("goroutines")
		smp.JetStream, smp.DB, smp.WAL, smp.DataDir = int64(num("jetstream_bytes")), int64(num("sqlite_bytes")), int64(num("wal_bytes")), int64(num("datadir_bytes"))
		smp.Orders, smp.Events = int64(num("orders")), int64(num("order_events"))
		smp.ConsumerPending, smp.OutboxAge, smp.SyncLag = num("consumer_pending"), num("outbox_oldest_age_s"), num("sync_lag_mean_s")
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("read %s: row %d: %w", path, n+2, err)
		}
		samples = append(samples, smp)
	}
	return samples, nil
}

// procRSS is a process's resident set size (VmRSS) in bytes.
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

// procFDs counts a process's open file descriptors.
func procFDs(pid int) (int, error) {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(entries), err
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// dirSize adds up the sizes of the files under dir; files that vanish
// during the walk (compacted blocks) are skipped.
func dirSize(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	return total
}
