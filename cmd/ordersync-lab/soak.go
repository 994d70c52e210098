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
	// Flat is how far RSS, descriptors and goroutines may spread over the
	// last two thirds of a process lifetime: max ≤ (1+Flat)·min.
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
	cmd := &cobra.Command{
		Use:   "soak",
		Short: "Run the pipeline for hours at a steady mix with periodic kill -9 and sample its resources",
		Long: `soak runs the simulator in this process and the pipeline (ordersync serve)
as a separate process on a data directory of its own, as chaos does, at a
steady mix: orders created through the admin API at the pace that makes
--rate order events a second (paid, some finalized or reversed, some
cancelled), 10% of webhooks duplicated and 5% held back 2s (late), a
fulfilment endpoint that fails a share of its deliveries. Every --kill-every
it kills the pipeline with SIGKILL and restarts it. Every --sample it
records the process's RSS, open descriptors, goroutines, the JetStream
store's size, the SQLite file and WAL sizes, the data directory's size and
the pipeline's lag (a CSV, --csv). At the end it stops the load, waits for
the mirror and runs chaos's checks (every order equal to the simulator's,
PAID exactly once, every 2xx webhook logged, no unjustified dead letter,
every delivery made). It fails when a check fails, when the WAL passed
--wal-limit, or when RSS, descriptors or goroutines spread more than --flat
over the last two thirds of a process lifetime (judged on six samples or
more there).`,
		Args: cobra.NoArgs,
		RunE: withBinary(func(cmd *cobra.Command, exe string) error {
			opts.exe = exe
			rep, err := runSoak(cmd.Context(), cmd.OutOrStdout(), opts)
			return verdict("soak", rep, err)
		}),
	}
	f := cmd.Flags()
	f.DurationVar(&opts.Duration, "duration", opts.Duration, "how long the load runs")
	f.Float64Var(&opts.Rate, "rate", opts.Rate, "order events (webhooks before duplicates) a second")
	f.DurationVar(&opts.KillEvery, "kill-every", opts.KillEvery, "kill -9 and restart the pipeline this often (0: never)")
	f.DurationVar(&opts.Sample, "sample", opts.Sample, "sample the pipeline's resources this often")
	f.Uint64Var(&opts.Seed, "seed", opts.Seed, "seed of the buyers' choices and the simulator's faults")
	f.DurationVar(&opts.ConvergeWithin, "converge-within", opts.ConvergeWithin, "fail unless the mirror matches this long after the load stops")
	f.Int64Var(&opts.WALLimit, "wal-limit", opts.WALLimit, "fail when the SQLite WAL exceeds this many bytes (0: no limit)")
	f.Float64Var(&opts.Flat, "flat", opts.Flat, "the spread allowed to RSS, descriptors and goroutines over the last two thirds of a lifetime")
	f.StringVar(&opts.CSV, "csv", "", "write the samples here (default: soak.csv beside the pipeline's log, kept)")
	f.BoolVar(&opts.Keep, "keep", false, "keep the data directory and the pipeline's log")
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
	// Smoothed are the least and greatest medians of smoothOver samples
	// of RSS, descriptors and goroutines, which Flat judges.
	Smoothed [3][2]float64
	Flat     bool
	Judged   bool // long enough to judge flatness
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

// minJudged is the fewest samples over the last two thirds of a process
// lifetime that its flatness is judged on: fewer cannot tell a trend
// from a moment.
const minJudged = 6

// judge splits the samples into process lifetimes, holds RSS, descriptors
// and goroutines over each one's last two thirds to Flat, the WAL to its
// limit, and works out the data directory's growth.
func (s *soakRun) judge() {
	rep := s.rep
	samples := rep.Samples
	for i := 0; i < len(samples); {
		j := i
		for j < len(samples) && samples[j].PID == samples[i].PID {
			j++
		}
		rep.Lifetimes = append(rep.Lifetimes, lifetimeOf(samples[i:j], s.opts.Flat))
		i = j
	}
	for _, l := range rep.Lifetimes {
		if l.Judged && !l.Flat {
			m := l.Smoothed
			rep.fail("pid %d (%.0fs to %.0fs): RSS %.0f–%.0f MiB, descriptors %.0f–%.0f, goroutines %.0f–%.0f (medians of %d samples) spread more than %.0f%% over the last two thirds",
				l.PID, l.From.Seconds(), l.To.Seconds(), m[0][0]/(1<<20), m[0][1]/(1<<20), m[1][0], m[1][1], m[2][0], m[2][1], smoothOver, 100*s.opts.Flat)
		}
	}
	if s.opts.WALLimit > 0 && rep.WALPeak > s.opts.WALLimit {
		rep.fail("the SQLite WAL reached %.1f MiB, over the limit of %.0f MiB", float64(rep.WALPeak)/(1<<20), float64(s.opts.WALLimit)/(1<<20))
	}
	orders := int64(len(s.sim.Orders()))
	if orders > 0 {
		rep.PerThousand = float64(rep.DataDirEnd) / float64(orders) * 1000
	}
	if len(samples) > 1 {
		first, last := samples[0], samples[len(samples)-1]
		if d := last.Orders - first.Orders; d > 0 {
			rep.GrowthPer1k = float64(last.DataDir-first.DataDir) / float64(d) * 1000
		}
	}
}

// lifetimeOf is one process's samples, judged over their last two
// thirds. Goroutines and descriptors at one instant count the requests in
// flight, so the judgement is on the median of each run of smoothOver
// samples: a burst passes, a leak does not.
func lifetimeOf(samples []soakSample, flat float64) soakLifetime {
	l := soakLifetime{PID: samples[0].PID, From: samples[0].At, To: samples[len(samples)-1].At}
	cut := l.From + (l.To-l.From)/3
	var series [3][]float64
	for _, smp := range samples {
		if smp.At < cut {
			continue
		}
		l.Samples++
		for k, v := range [3]float64{float64(smp.RSS), float64(smp.FDs), smp.Goroutines} {
			series[k] = append(series[k], v)
		}
	}
	l.Judged = l.Samples >= minJudged
	l.Flat = true
	for k, p := range []*[2]float64{&l.RSS, &l.FDs, &l.Goroutines} {
		*p = spread(series[k])
		med := make([]float64, 0, len(series[k]))
		for i := 0; i+smoothOver <= len(series[k]); i++ {
			med = append(med, median(series[k][i:i+smoothOver]))
		}
		if len(med) == 0 {
			med = series[k]
		}
		l.Smoothed[k] = spread(med)
		if l.Smoothed[k][1] > (1+flat)*l.Smoothed[k][0] {
			l.Flat = false
		}
	}
	return l
}

// smoothOver is how many consecutive samples a lifetime's judgement takes
// the median of.
const smoothOver = 5

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
	return s[len(s)/2]
}

func printSoakReport(w io.Writer, r *soakReport) {
	printChaosReport(w, r.chaosReport)
	fmt.Fprintf(w, "\nordersync-lab soak: load %.0fs, %d orders created (%d in the simulator), %d order events (%.1f a second); samples in %s\n",
		r.LoadDuration.Seconds(), r.Created, r.Orders, r.Events, float64(r.Events)/max(r.LoadDuration.Seconds(), 1), r.CSV)
	fmt.Fprintf(w, "  %-7s %-13s %-8s %-17s %-11s %-13s %s\n", "pid", "lifetime", "samples", "RSS MiB", "fds", "goroutines", "last two thirds")
	for _, l := range r.Lifetimes {
		m := l.Smoothed
		verdict := fmt.Sprintf("flat: medians of %d spread %.0f%%", smoothOver, 100*(max(m[0][1]/m[0][0], m[1][1]/m[1][0], m[2][1]/m[2][0])-1))
		switch {
		case !l.Judged:
			verdict = "too short to judge"
		case !l.Flat:
			verdict = "NOT " + verdict
		}
		fmt.Fprintf(w, "  %-7d %-13s %-8d %7.1f–%-8.1f %4.0f–%-6.0f %5.0f–%-7.0f %s\n", l.PID, fmt.Sprintf("%.0f–%.0fs", l.From.Seconds(), l.To.Seconds()), l.Samples,
			l.RSS[0]/(1<<20), l.RSS[1]/(1<<20), l.FDs[0], l.FDs[1], l.Goroutines[0], l.Goroutines[1], verdict)
	}
	var peakLag, peakPending, peakOutbox float64
	var peakJS int64
	for _, s := range r.Samples {
		peakLag, peakPending, peakOutbox = max(peakLag, s.SyncLag), max(peakPending, s.ConsumerPending), max(peakOutbox, s.OutboxAge)
		peakJS = max(peakJS, s.JetStream)
	}
	mib := func(v int64) float64 { return float64(v) / (1 << 20) }
	fmt.Fprintf(w, "  SQLite WAL peak               %.1f MiB\n", mib(r.WALPeak))
	fmt.Fprintf(w, "  JetStream store peak          %.1f MiB\n", mib(peakJS))
	fmt.Fprintf(w, "  data dir at rest              %.1f MiB, %.2f MiB per 1,000 orders; grew %.2f MiB per 1,000 orders created under load\n",
		mib(r.DataDirEnd), r.PerThousand/(1<<20), r.GrowthPer1k/(1<<20))
	fmt.Fprintf(w, "  pipeline lag peaks            mean sync lag %.2fs over a sample, %.0f events waiting for a worker, oldest unsent outbox message %.1fs\n",
		peakLag, peakPending, peakOutbox)
	if len(r.Problems) > 0 {
		fmt.Fprintf(w, "  soak: FAIL (%s)\n", strings.Join(r.Problems, "; "))
		return
	}
	fmt.Fprintln(w, "  soak: PASS")
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
