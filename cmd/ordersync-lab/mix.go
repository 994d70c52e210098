package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/datadir"
	"github.com/ordersync/ordersync/internal/loadpost"
	"github.com/ordersync/ordersync/sim"
)

// The real mix, per order of the run (docs/benchmarks.md "Real mix"). Who
// gets what is decided by the order's index, so every run of a size sends
// the same webhooks.
const (
	// mixCancelEvery: every 10th order is cancelled unpaid (Cancelled);
	// the others are paid (SuccessPayment).
	mixCancelEvery = 10
	// Of every 20 paid orders, 3 are reversed (SuccessReverse, to
	// CANCELLED), 2 stay PAID and 15 are finalized (Finalized).
	mixReversed, mixStayPaid, mixPaidCycle = 3, 2, 20
	// mixDuplicateEvery: every 10th webhook of a round is sent a second
	// time, identical, after the round's first posts.
	mixDuplicateEvery = 10
	// mixLateEvery: of every 20 paid orders that close, one's payment
	// webhook comes again (a new delivery) after the closing webhook.
	mixLateEvery = 20
)

// mixOptions size a real-mix run.
type mixOptions struct {
	// Orders is how many orders live their whole life in the run.
	Orders int
	// Prefill is how many orders the mirror holds before the run.
	Prefill int
	// PrefillDir keeps the prepared prefill (idle's preparation) for the
	// next runs, which copy it; empty: prepared in the run's directory.
	PrefillDir  string
	Connections int
	// Timeout bounds the wait for each round's changes in the mirror.
	Timeout time.Duration
	Workers int
	Keep    bool

	exe string
	env []string
}

func defaultMixOptions() mixOptions {
	return mixOptions{Orders: 20000, Prefill: 10000, Connections: 64, Timeout: 3 * time.Minute}
}

func (o mixOptions) validate() error {
	switch {
	case o.Orders < mixPaidCycle:
		return fmt.Errorf("mix: orders must be ≥ %d, got %d", mixPaidCycle, o.Orders)
	case o.Prefill < 0:
		return fmt.Errorf("mix: prefill must not be negative, got %d", o.Prefill)
	case o.PrefillDir != "" && o.Prefill == 0:
		return errors.New("mix: --prefill-dir needs --prefill")
	case o.Connections < 1:
		return fmt.Errorf("mix: connections must be ≥ 1, got %d", o.Connections)
	case o.Timeout <= 0:
		return fmt.Errorf("mix: timeout must be positive, got %s", o.Timeout)
	case o.Workers < 0:
		return fmt.Errorf("mix: workers must not be negative, got %d", o.Workers)
	case o.exe == "":
		return errors.New("mix: no ordersync binary to run")
	}
	return nil
}

func newMixCommand() *cobra.Command {
	opts := defaultMixOptions()
	cmd := &cobra.Command{
		Use:   "mix",
		Short: "Measure whole order lives (created, paid, finalized or cancelled) over a prefilled mirror",
		Long: `mix measures the real binary on the real mix: --orders orders each live their
whole life, over a mirror that already holds --prefill orders. It starts
ordersync serve as a child process against a zero-latency simulator in this
process, on loopback, as loadtest does, and goes in rounds, each posted
over --connections connections and waited for until the mirror shows it
and the queue is drained:

  creation   one Created webhook per order;
  payment    every 10th order cancelled unpaid (Cancelled), the rest paid
             (SuccessPayment);
  closing    of every 20 paid orders 15 finalized (Finalized), 3 reversed
             (SuccessReverse, to CANCELLED), 2 left PAID; then, late, the
             payment webhook again (a new delivery) for 1 in 20 of those
             that closed.

In every round every 10th webhook is sent twice, identical, after the
round's first posts. The status-change phase is the payment and closing
rounds; creation is measured apart. The report: the pipeline's CPU per
order life, per webhook, per new order and per status change; the bytes
it wrote to storage (write_bytes less cancelled_write_bytes of
/proc/PID/io) and passed to write calls (wchar) per new order and per
status change; upstream fetches per order; ack latency; peak RSS; the back
office's freshness lag (the indexer's, read every 100 ms of the load, then
for 20 single status changes on the idle pipeline); the data directory's
growth per 1,000 orders by part (SQLite tables grouped, with dbstat when
the lab is built with -tags sqlite_dbstat; the WAL; JetStream).

The prefill is idle's preparation: --prefill orders mirrored through the
binary under test, one Created webhook each. --prefill-dir keeps it for
later runs, which copy it (a million orders take hours to prepare); it is
tied to the binary that prepared it. It exits 0 unless a round did not
finish.`,
		Args: cobra.NoArgs,
		RunE: withBinary(func(cmd *cobra.Command, exe string) error {
			opts.exe = exe
			rep, err := runMix(cmd.Context(), cmd.OutOrStdout(), opts)
			if err != nil {
				return err
			}
			printMixReport(cmd.OutOrStdout(), rep)
			return nil
		}),
	}
	f := cmd.Flags()
	f.IntVar(&opts.Orders, "orders", opts.Orders, "orders whose whole life the run drives")
	f.IntVar(&opts.Prefill, "prefill", opts.Prefill, "orders the mirror holds before the run (1000000 for the large figure)")
	f.StringVar(&opts.PrefillDir, "prefill-dir", "", "keep the prepared prefill here and reuse it (one directory per ordersync binary)")
	f.IntVar(&opts.Connections, "connections", opts.Connections, "concurrent webhook connections")
	f.DurationVar(&opts.Timeout, "timeout", opts.Timeout, "give up waiting for a round's changes in the mirror after this long")
	f.IntVar(&opts.Workers, "workers", 0, "the pipeline's --workers (default: its own default)")
	f.StringArrayVar(&opts.env, "child-env", nil, "KEY=VALUE added to the pipeline's environment (repeat)")
	f.BoolVar(&opts.Keep, "keep", false, "keep the run's data directory and log, and print where they are")
	return cmd
}

// mixPhase is what one phase of the mix cost, in totals.
type mixPhase struct {
	Webhooks   int // answered 200, duplicates and late ones included
	Changes    int // orders created, or status changes
	Took       time.Duration
	CPU        phaseCPU
	WriteBytes int64 // the pipeline's, to storage (procWrites)
	WriteCalls int64 // the pipeline's, through write calls (wchar)
	Fetches    int64
}

// mixReport is what a real-mix run measured.
type mixReport struct {
	Prefill, Orders int
	// Create is the creation round; Change the payment and closing rounds.
	Create, Change mixPhase
	// What the run sent: orders by fate, and the extra webhooks.
	Paid, CancelledUnpaid, Finalized, Reversed, Duplicates, Late int
	Refused                                                      int64
	AckP50, AckP99, AckMax                                       time.Duration
	PeakRSS                                                      int64
	// Freshness is the back office's freshness lag during the load and on
	// the idle pipeline after it (mix_freshness.go); n/a without an indexer.
	Freshness string
	// DiskBefore and DiskAfter are the data directory before the creation
	// round and after the last round.
	DiskBefore, DiskAfter diskUsage
}

func (r *mixReport) webhooks() int { return r.Create.Webhooks + r.Change.Webhooks }

// perOrderLife is the pipeline's CPU of both phases per order.
func (r *mixReport) perOrderLife() time.Duration {
	return (r.Create.CPU.Pipeline + r.Change.CPU.Pipeline) / time.Duration(r.Orders)
}

func (r *mixReport) perWebhook() time.Duration {
	return (r.Create.CPU.Pipeline + r.Change.CPU.Pipeline) / time.Duration(max(r.webhooks(), 1))
}

func (p mixPhase) perChange() time.Duration { return p.CPU.Pipeline / time.Duration(max(p.Changes, 1)) }

func (p mixPhase) bytesPerChange() float64 { return float64(p.WriteBytes) / float64(max(p.Changes, 1)) }

func (p mixPhase) callBytesPerChange() float64 {
	return float64(p.WriteCalls) / float64(max(p.Changes, 1))
}

func (r *mixReport) fetchesPerOrder() float64 {
	return float64(r.Create.Fetches+r.Change.Fetches) / float64(r.Orders)
}

// mixRun is one run's pipeline and what it measured so far.
type mixRun struct {
	opts      mixOptions
	dataDir   string
	out       io.Writer
	lp        *loadPipeline
	queue     *heldCounter // the pipeline's events consumer
	latencies []time.Duration
	rep       *mixReport
}

func runMix(ctx context.Context, out io.Writer, opts mixOptions) (*mixReport, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ordersync-mix-")
	if err != nil {
		return nil, err
	}
	if opts.Keep {
		fmt.Fprintf(out, "data directory and log under %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	recipe, err := mixPrefill(ctx, out, opts, dir)
	if err != nil {
		return nil, err
	}
	// The simulator holds the prefilled orders again (the same seed makes
	// the same codes), so the run's orders get codes of their own.
	s, simURL, _, err := recipe.sim(ctx)
	if err != nil {
		return nil, err
	}
	lp, err := startPipelineOn(ctx, s, simURL, recipe.SecretKey, recipe.WebhookKey, dir, loadOptions{Workers: opts.Workers, exe: opts.exe, env: opts.env}, "all")
	if err != nil {
		return nil, err
	}
	defer lp.Close()
	if n, err := countMirrored(ctx, lp.db); err != nil || n != opts.Prefill {
		return nil, errors.Join(err, fmt.Errorf("mix: the prefilled mirror holds %d orders, want %d", n, opts.Prefill))
	}
	orders, err := lp.createOrders(opts.Orders)
	if err != nil {
		return nil, err
	}
	poster, err := newWebhookPoster(lp.child.WebhookURL(), lp.webhookSecret, opts.Connections)
	if err != nil {
		return nil, err
	}
	defer poster.Close()
	queue, err := newHeldCounter(lp.child.NATSURL(), "ORDERSYNC_EVENTS", "ordersync-worker")
	if err != nil {
		return nil, err
	}
	defer queue.Close()
	m := &mixRun{opts: opts, dataDir: filepath.Join(dir, "data"), out: out, lp: lp, queue: queue, rep: &mixReport{Prefill: opts.Prefill, Orders: opts.Orders}}
	if err := m.run(ctx, poster, orders); err != nil {
		return nil, err
	}
	return m.rep, nil
}

// mixPrefill leaves dir/data holding opts.Prefill mirrored orders and
// returns the recipe that recreates them in a simulator.
func mixPrefill(ctx context.Context, out io.Writer, opts mixOptions, dir string) (idleRecipe, error) {
	if opts.Prefill == 0 {
		return idleRecipe{Seed: 1, Clock: time.Now().UTC().Truncate(time.Millisecond), SecretKey: app.RandomSecret(), WebhookKey: app.RandomSecret()}, nil
	}
	keep := opts.PrefillDir
	if keep == "" {
		keep = filepath.Join(dir, "prefill")
	}
	sum, err := fileSHA256(opts.exe)
	if err != nil {
		return idleRecipe{}, err
	}
	marker := filepath.Join(keep, "ordersync.sha256")
	if b, err := os.ReadFile(marker); err == nil && string(b) != sum {
		return idleRecipe{}, fmt.Errorf("mix: %s was prepared by another ordersync binary: give each binary a directory of its own", keep)
	}
	if err := os.MkdirAll(keep, 0o700); err != nil {
		return idleRecipe{}, err
	}
	// A low priority: preparing is not the measurement, and may run while
	// another one does.
	recipe, err := prepared(ctx, out, idleOptions{Dir: keep, Orders: opts.Prefill, exe: opts.exe, env: opts.env})
	if err != nil {
		return recipe, fmt.Errorf("mix: prefill: %w", err)
	}
	if err := os.WriteFile(marker, []byte(sum), 0o600); err != nil {
		return recipe, err
	}
	if out, err := exec.CommandContext(ctx, "cp", "-a", filepath.Join(keep, "data"), filepath.Join(dir, "data")).CombinedOutput(); err != nil {
		return recipe, fmt.Errorf("mix: copy the prefilled data directory: %w: %s", err, bytes.TrimSpace(out))
	}
	return recipe, nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// run sends the mix's rounds and measures its two phases.
func (m *mixRun) run(ctx context.Context, poster *loadpost.Poster, orders []ordersync.PaymentLinkResult) error {
	lp, rep, k := m.lp, m.rep, len(orders)
	var err error
	rep.DiskBefore = measureDisk(ctx, m.dataDir)
	fmt.Fprintf(m.out, "mix: %d orders over a mirror of %d, %d connections, pipeline pid %d\n", k, m.opts.Prefill, m.opts.Connections, lp.child.PID())

	created := make([][]byte, k)
	for i, o := range orders {
		created[i] = webhookBody(o, ordersync.EventCreated, i)
	}
	pm, err := m.begin()
	if err != nil {
		return err
	}
	lag := startLagSampler(ctx, lp.db)
	defer lag.stop()
	if err := m.round(ctx, poster, "creation", created, nil, func(ctx context.Context) (bool, error) {
		n, err := countMirrored(ctx, lp.db)
		return n >= m.opts.Prefill+k, err
	}); err != nil {
		return err
	}
	if err := m.end(pm, &rep.Create, k); err != nil {
		return err
	}

	if pm, err = m.begin(); err != nil {
		return err
	}
	var pay [][]byte
	var paid []ordersync.PaymentLinkResult
	for i, o := range orders {
		if i%mixCancelEvery == mixCancelEvery-1 {
			if _, err := lp.sim.Cancel(o.OrderCode); err != nil {
				return err
			}
			pay = append(pay, webhookBody(o, ordersync.EventCancelled, k+i))
			rep.CancelledUnpaid++
			continue
		}
		if _, err := lp.sim.Pay(o.OrderCode, sim.DefaultBuyer); err != nil {
			return err
		}
		pay = append(pay, webhookBody(o, ordersync.EventSuccessPayment, k+i))
		paid = append(paid, o)
	}
	rep.Paid = len(paid)
	if err := m.round(ctx, poster, "payment", pay, nil, m.statusesAre(map[ordersync.Status]int{
		ordersync.StatusPending: m.opts.Prefill, ordersync.StatusPaid: rep.Paid, ordersync.StatusCancelled: rep.CancelledUnpaid,
	})); err != nil {
		return err
	}
	var closing, late [][]byte
	var stay []ordersync.PaymentLinkResult // left paid: the idle probes finalize them
	for j, o := range paid {
		switch r := j % mixPaidCycle; {
		case r < mixReversed:
			if _, err := lp.sim.Reverse(o.OrderCode); err != nil {
				return err
			}
			closing = append(closing, webhookBody(o, ordersync.EventSuccessReverse, 2*k+j))
			rep.Reversed++
		case r < mixReversed+mixStayPaid:
			stay = append(stay, o)
			continue
		default:
			if _, err := lp.sim.Finalize(o.OrderCode); err != nil {
				return err
			}
			closing = append(closing, webhookBody(o, ordersync.EventFinalized, 2*k+j))
			rep.Finalized++
		}
		if j%mixLateEvery == mixLateEvery-1 {
			late = append(late, webhookBody(o, ordersync.EventSuccessPayment, 3*k+j))
		}
	}
	rep.Late = len(late)
	if err := m.round(ctx, poster, "closing", closing, late, m.statusesAre(map[ordersync.Status]int{
		ordersync.StatusPending: m.opts.Prefill, ordersync.StatusPaid: rep.Paid - rep.Finalized - rep.Reversed,
		ordersync.StatusFinalized: rep.Finalized, ordersync.StatusCancelled: rep.CancelledUnpaid + rep.Reversed,
	})); err != nil {
		return err
	}
	if err := m.end(pm, &rep.Change, k+rep.Finalized+rep.Reversed); err != nil {
		return err
	}

	slices.Sort(m.latencies)
	rep.AckP50, rep.AckP99, rep.AckMax = quantile(m.latencies, 0.50), quantile(m.latencies, 0.99), quantile(m.latencies, 1)
	if rep.PeakRSS, err = lp.child.PeakRSS(); err != nil {
		return err
	}
	// The data directory is measured before the idle probes, which change
	// a few orders more.
	rep.DiskAfter = measureDisk(ctx, m.dataDir)
	load, loadErr := lag.stop()
	var caughtUp time.Duration
	var idle []time.Duration
	idleErr := loadErr
	if loadErr == nil {
		caughtUp, idle, idleErr = m.idleFreshness(ctx, poster, stay)
	}
	rep.Freshness = freshnessReport(load, loadErr, caughtUp, idle, idleErr)
	return nil
}

// phaseMeter holds a phase's starting readings.
type phaseMeter struct {
	cpu      *cpuMeter
	written  int64
	calls    int64
	gets     int64
	answered int
	start    time.Time
}

func (m *mixRun) begin() (*phaseMeter, error) {
	cpu, err := startCPUMeter(m.lp.child)
	if err != nil {
		return nil, err
	}
	written, calls, err := procWrites(m.lp.child.PID())
	if err != nil {
		return nil, err
	}
	return &phaseMeter{cpu: cpu, written: written, calls: calls, gets: m.lp.sim.Stats().Gets, answered: len(m.latencies), start: time.Now()}, nil
}

// end fills ph with the totals since pm began; changes are the orders
// created or the status changes of the phase.
func (m *mixRun) end(pm *phaseMeter, ph *mixPhase, changes int) error {
	ph.Took, ph.Changes = time.Since(pm.start), changes
	var err error
	if ph.CPU, err = pm.cpu.per(1); err != nil {
		return err
	}
	written, calls, err := procWrites(m.lp.child.PID())
	if err != nil {
		return err
	}
	ph.WriteBytes, ph.WriteCalls = written-pm.written, calls-pm.calls
	ph.Fetches = m.lp.sim.Stats().Gets - pm.gets
	ph.Webhooks = len(m.latencies) - pm.answered
	return nil
}

// round posts bodies, every mixDuplicateEvery-th of them again after the
// first posts, then late, and waits until done holds and the pipeline's
// queue holds no event.
func (m *mixRun) round(ctx context.Context, poster *loadpost.Poster, name string, bodies, late [][]byte, done func(context.Context) (bool, error)) error {
	all := slices.Clone(bodies)
	for i := mixDuplicateEvery - 1; i < len(bodies); i += mixDuplicateEvery {
		all = append(all, bodies[i])
		m.rep.Duplicates++
	}
	all = append(all, late...)
	ctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
	defer cancel()
	start := time.Now()
	lat, refused := postBodies(ctx, poster, all, m.opts.Connections)
	m.latencies = append(m.latencies, lat...)
	m.rep.Refused += refused
	for {
		t0 := time.Now()
		ok, err := done(ctx)
		if err == nil && ok {
			var held uint64
			if held, err = m.queue.held(ctx); err == nil && held == 0 {
				break
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("mix: the %s round is not in the mirror after %s (last error: %v)", name, m.opts.Timeout, err)
		}
		if err != nil {
			return fmt.Errorf("mix: %s round: %w", name, err)
		}
		// A count scans the orders: at most a third of the time goes to
		// counting, however large the mirror.
		time.Sleep(max(20*time.Millisecond, 2*time.Since(t0)))
	}
	fmt.Fprintf(m.out, "mix: %s round: %d webhooks in %.2fs\n", name, len(all), time.Since(start).Seconds())
	return nil
}

// statusesAre is done when the mirror holds want orders of each status.
func (m *mixRun) statusesAre(want map[ordersync.Status]int) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		counts, err := m.lp.db.CountOrdersByStatus(ctx)
		if err != nil {
			return false, err
		}
		for st, n := range want {
			if counts[st] != n {
				return false, nil
			}
		}
		return true, nil
	}
}

// procWrites reads /proc/PID/io. stored is what the process caused to be
// written to storage: write_bytes (page cache writes count when a clean
// page is dirtied, so a page dirtied again before the kernel writes it
// back counts once) less cancelled_write_bytes (dirty pages dropped by a
// truncation, as of a WAL truncated after a checkpoint). calls is wchar:
// the bytes passed to write calls, to files and sockets alike, which does
// not depend on when the kernel writes back.
func procWrites(pid int) (stored, calls int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("bytes written: %w", err)
	}
	fields := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("bytes written: %s in /proc/%d/io: %w", name, pid, err)
		}
		fields[name] = n
	}
	for _, name := range []string{"write_bytes", "cancelled_write_bytes", "wchar"} {
		if _, ok := fields[name]; !ok {
			return 0, 0, fmt.Errorf("bytes written: no %s in /proc/%d/io", name, pid)
		}
	}
	return fields["write_bytes"] - fields["cancelled_write_bytes"], fields["wchar"], nil
}

// diskUsage is the data directory's size by part.
type diskUsage struct {
	// Tables are SQLite's bytes per table, its indexes included, from
	// dbstat; nil when this build lacks it (TablesErr says why).
	Tables    map[string]int64
	TablesErr string
	// DB and WAL are the SQLite files, JetStream its directory, Total the
	// whole data directory.
	DB, WAL, JetStream, Total int64
}

// tablePart names the part of the mirror a table belongs to.
func tablePart(table string) string {
	switch table {
	case "orders", "order_line_items", "order_metadata":
		return "mirror"
	case "order_name_tokens", "report_buckets":
		return "back office"
	case "status_history", "document_changes":
		return "history"
	case "event_log":
		return "event log"
	case "outbox", "delivery_log":
		return "outbox"
	}
	return "other"
}

var diskParts = []string{"mirror", "back office", "history", "event log", "outbox", "other"}

func measureDisk(ctx context.Context, dataDir string) diskUsage {
	file := datadir.DatabaseFile(dataDir)
	u := diskUsage{DB: fileSize(file), WAL: fileSize(file + "-wal"), JetStream: dirSize(datadir.JetStreamDir(dataDir)), Total: dirSize(dataDir)}
	u.Tables, u.TablesErr = sqliteTables(ctx, file)
	return u
}

// sqliteTables reads dbstat (SQLite built with SQLITE_ENABLE_DBSTAT_VTAB:
// the lab built with -tags sqlite_dbstat) for the bytes of each table and
// its indexes.
func sqliteTables(ctx context.Context, file string) (map[string]int64, string) {
	db, err := sql.Open("sqlite3", "file:"+file+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		return nil, err.Error()
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT coalesce(m.tbl_name, d.name), sum(d.pgsize) FROM dbstat AS d LEFT JOIN sqlite_master AS m ON m.name = d.name WHERE d.aggregate = 1 GROUP BY 1`)
	if err != nil {
		if strings.Contains(err.Error(), "no such table: dbstat") {
			return nil, "no dbstat in this build: build the lab with -tags sqlite_dbstat"
		}
		return nil, err.Error()
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var size int64
		if err := rows.Scan(&name, &size); err != nil {
			return nil, err.Error()
		}
		out[name] = size
	}
	if err := rows.Err(); err != nil {
		return nil, err.Error()
	}
	return out, ""
}

func printMixReport(w io.Writer, r *mixReport) {
	us := func(d time.Duration) string { return fmt.Sprintf("%d µs", d.Microseconds()) }
	kb := func(b float64) string { return fmt.Sprintf("%.1f KB", b/1000) }
	per1k := func(before, after int64) string {
		return fmt.Sprintf("%.2f MiB", float64(after-before)/float64(r.Orders)*1000/(1<<20))
	}
	c, s := r.Create, r.Change
	fmt.Fprintf(w, "\nordersync-lab mix (the real binary as a child process, loopback): %d order lives over a mirror of %d\n", r.Orders, r.Prefill)
	fmt.Fprintf(w, "  sent                  %d created; %d paid, %d cancelled unpaid; %d finalized, %d reversed, %d left paid; %d duplicate and %d late webhooks\n",
		r.Orders, r.Paid, r.CancelledUnpaid, r.Finalized, r.Reversed, r.Paid-r.Finalized-r.Reversed, r.Duplicates, r.Late)
	fmt.Fprintf(w, "  webhooks              %d answered 200 (creation %d, status changes %d; %d refused and sent again)\n", r.webhooks(), c.Webhooks, s.Webhooks, r.Refused)
	fmt.Fprintf(w, "  CPU per order life    pipeline %s (creation and %.2f status changes an order)\n", us(r.perOrderLife()), float64(s.Changes)/float64(r.Orders))
	fmt.Fprintf(w, "  CPU per webhook       pipeline %s\n", us(r.perWebhook()))
	fmt.Fprintf(w, "  CPU per new order     pipeline %s, load generator and simulator %s (creation: %.2fs)\n", us(c.perChange()), us(c.CPU.Harness/time.Duration(max(c.Changes, 1))), c.Took.Seconds())
	fmt.Fprintf(w, "  CPU per status change pipeline %s, load generator and simulator %s (%d changes: %.2fs)\n", us(s.perChange()), us(s.CPU.Harness/time.Duration(max(s.Changes, 1))), s.Changes, s.Took.Seconds())
	fmt.Fprintf(w, "  bytes written         %s per new order, %s per status change to storage (write_bytes less cancelled_write_bytes of /proc/PID/io)\n", kb(c.bytesPerChange()), kb(s.bytesPerChange()))
	fmt.Fprintf(w, "  bytes to write calls  %s per new order, %s per status change (wchar: files and sockets)\n", kb(c.callBytesPerChange()), kb(s.callBytesPerChange()))
	fmt.Fprintf(w, "  WAL frames            n/a (not visible outside the process)\n")
	fmt.Fprintf(w, "  upstream fetches      %.2f per order (creation %.2f, status changes %.2f)\n", r.fetchesPerOrder(), float64(c.Fetches)/float64(r.Orders), float64(s.Fetches)/float64(r.Orders))
	fmt.Fprintf(w, "  ack latency           p50 %s, p99 %s, max %s\n", r.AckP50.Round(10*time.Microsecond), r.AckP99.Round(10*time.Microsecond), r.AckMax.Round(100*time.Microsecond))
	fmt.Fprintf(w, "  peak RSS              %.0f MB\n", float64(r.PeakRSS)/(1<<20))
	freshness := r.Freshness
	if freshness == "" {
		freshness = "n/a (no indexer reports one)"
	}
	fmt.Fprintf(w, "  back office freshness %s\n", freshness)
	b, a := r.DiskBefore, r.DiskAfter
	// The WAL is left out of the growth: checkpoints reuse it, so its size
	// is a bound, not a cost per order.
	fmt.Fprintf(w, "  data dir per 1,000    %s without the WAL (SQLite file %s, JetStream %s); %.0f MiB before, %.0f MiB after, WAL %.0f MiB\n",
		per1k(b.Total-b.WAL, a.Total-a.WAL), per1k(b.DB, a.DB), per1k(b.JetStream, a.JetStream), float64(b.Total)/(1<<20), float64(a.Total)/(1<<20), float64(a.WAL)/(1<<20))
	if a.Tables == nil {
		fmt.Fprintf(w, "  SQLite by part        n/a (%s)\n", a.TablesErr)
		return
	}
	partB, partA := map[string]int64{}, map[string]int64{}
	for t, n := range b.Tables {
		partB[tablePart(t)] += n
	}
	var grown []string
	for t, n := range a.Tables {
		partA[tablePart(t)] += n
		if n > b.Tables[t] {
			grown = append(grown, t)
		}
	}
	parts := make([]string, len(diskParts))
	for i, p := range diskParts {
		parts[i] = p + " " + per1k(partB[p], partA[p])
	}
	fmt.Fprintf(w, "  SQLite by part        per 1,000 orders: %s (tables and their indexes, dbstat)\n", strings.Join(parts, ", "))
	sort.Slice(grown, func(i, j int) bool {
		return a.Tables[grown[i]]-b.Tables[grown[i]] > a.Tables[grown[j]]-b.Tables[grown[j]]
	})
	for i, t := range grown {
		grown[i] = t + " " + per1k(b.Tables[t], a.Tables[t])
	}
	fmt.Fprintf(w, "  SQLite by table       per 1,000 orders: %s\n", strings.Join(grown, ", "))
}
