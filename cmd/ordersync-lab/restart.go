package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
)

// restartOptions size a rolling-restart run: the chaos run with SIGTERM
// and a restart in place of kill -9, behind a load balancer's probe.
type restartOptions struct {
	chaos    chaosOptions
	Restarts int
	// Drain is the pipeline's shutdown_drain; ProbeEvery the balancer's
	// probe interval, which the drain must exceed.
	Drain, ProbeEvery time.Duration
}

func defaultRestartOptions() restartOptions {
	c := defaultChaosOptions()
	c.Orders, c.Kills = 1500, 0
	return restartOptions{chaos: c, Restarts: 3, Drain: 2 * time.Second, ProbeEvery: 500 * time.Millisecond}
}

func newRestartCommand() *cobra.Command {
	opts := defaultRestartOptions()
	cmd := &cobra.Command{
		Use:   "restart",
		Short: "Restart the pipeline with SIGTERM under load behind a readiness probe and prove no webhook is refused",
		Long: `restart runs the chaos run's pipeline and simulator (with its faults) and,
instead of kill -9, stops the pipeline with SIGTERM --restarts times at
evenly spaced points of the orders' creation, and starts it again, as a
rolling restart does. The recording proxy in front of the webhook port acts
as the load balancer: it polls /readyz every --probe-every and forwards
webhooks only while the last poll said ready, and no longer than --drain
after that poll was sent (what the drain covers), answering 503 itself
otherwise (the provider retries). The pipeline runs with --shutdown-drain
--drain. It passes only if no webhook forwarded while the probe said ready
met a refused connection or a non-2xx answer, every SIGTERM ended in exit
0, and the chaos run's checks pass: every order identical to the
simulator's within --converge-within, exactly one PAID trigger per paid
order, every webhook answered 2xx in the event log, every delivery made.`,
		Args: cobra.NoArgs,
		RunE: withBinary(func(cmd *cobra.Command, exe string) error {
			opts.chaos.exe = exe
			rep, err := runRestart(cmd.Context(), cmd.OutOrStdout(), opts)
			return verdict("restart", rep, err)
		}),
	}
	f := cmd.Flags()
	f.IntVar(&opts.chaos.Orders, "orders", opts.chaos.Orders, "orders to create through the pipeline")
	f.IntVar(&opts.Restarts, "restarts", opts.Restarts, "times to stop the pipeline with SIGTERM and start it again mid-run")
	f.DurationVar(&opts.Drain, "drain", opts.Drain, "the pipeline's --shutdown-drain")
	f.DurationVar(&opts.ProbeEvery, "probe-every", opts.ProbeEvery, "the load balancer's /readyz probe interval")
	f.Uint64Var(&opts.chaos.Seed, "seed", opts.chaos.Seed, "seed of the buyers' choices and the simulator's faults")
	f.DurationVar(&opts.chaos.ConvergeWithin, "converge-within", opts.chaos.ConvergeWithin, "fail unless the mirror matches this long after the faults stop")
	f.BoolVar(&opts.chaos.Keep, "keep", false, "keep the data directory and the pipeline's log, and print where they are")
	f.BoolVar(&opts.chaos.Verbose, "verbose", false, "log the simulator's warnings to stderr")
	return cmd
}

// restartReport is a chaos report with what the restarts did.
type restartReport struct {
	*chaosReport
	Stops []time.Duration // each SIGTERM to the process's exit
	// Unready is how long the probe said not ready, from the first such
	// answer after each SIGTERM to the first ready one after its restart.
	Unready                             []time.Duration
	HeldBack, Refused, Rejected, Probes int64
	Refusals                            []string
	extraProblems                       []string
}

func (r *restartReport) OK() bool {
	return r.chaosReport != nil && r.chaosReport.OK() && len(r.extraProblems) == 0
}

func runRestart(ctx context.Context, out io.Writer, opts restartOptions) (*restartReport, error) {
	switch {
	case opts.Restarts < 1:
		return nil, fmt.Errorf("restart: restarts must be ≥ 1, got %d", opts.Restarts)
	case opts.ProbeEvery <= 0 || opts.Drain <= opts.ProbeEvery:
		return nil, fmt.Errorf("restart: the drain (%s) must exceed the probe interval (%s), which must be positive", opts.Drain, opts.ProbeEvery)
	}
	rep := &restartReport{}
	c := opts.chaos
	c.args = append(c.args, "--shutdown-drain", opts.Drain.String())
	c.fault = func(ctx context.Context, r *chaosRun) error {
		return rollingRestarts(ctx, r, opts, rep)
	}
	chaos, err := runChaos(ctx, out, c)
	rep.chaosReport = chaos
	if err != nil {
		return rep, err
	}
	if rep.Refused > 0 {
		rep.extraProblems = append(rep.extraProblems, fmt.Sprintf("%d webhooks forwarded while /readyz said ready met a connection error, e.g. %s", rep.Refused, strings.Join(rep.Refusals, "; ")))
	}
	if rep.Rejected > 0 {
		rep.extraProblems = append(rep.extraProblems, fmt.Sprintf("%d webhooks forwarded while /readyz said ready were answered with a status other than 2xx", rep.Rejected))
	}
	if len(rep.Stops) != opts.Restarts {
		rep.extraProblems = append(rep.extraProblems, fmt.Sprintf("%d of %d restarts made", len(rep.Stops), opts.Restarts))
	}
	printRestartReport(out, rep)
	return rep, nil
}

// rollingRestarts probes /readyz as a load balancer does, gating the
// proxy on its answers, and stops the pipeline with SIGTERM and starts it
// again each time creation passes the next of Restarts evenly spaced
// points.
func rollingRestarts(ctx context.Context, r *chaosRun, opts restartOptions, rep *restartReport) error {
	p := r.proxy
	p.readyUntil.Store(math.MaxInt64) // the pipeline answered /readyz 200 before it was started
	p.gated.Store(true)
	defer func() {
		p.gated.Store(false)
		rep.HeldBack, rep.Refused, rep.Rejected = p.heldBack.Load(), p.refusedWhileReady.Load(), p.rejectedWhileReady.Load()
		p.mu.Lock()
		rep.Refusals = p.refusals
		p.mu.Unlock()
	}()

	probeCtx, stopProbe := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopProbe(); wg.Wait() }()
	var mu sync.Mutex
	var unreadySince time.Time
	wg.Go(func() {
		// A probe that takes a second is a failed one, as balancers time
		// out theirs.
		client := &http.Client{Timeout: time.Second}
		tick := time.NewTicker(opts.ProbeEvery)
		defer tick.Stop()
		for {
			select {
			case <-probeCtx.Done():
				return
			case <-tick.C:
			}
			ready, sent := false, time.Now()
			if res, err := client.Get(r.child.AdminURL() + "/readyz"); err == nil {
				ready = res.StatusCode == http.StatusOK
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
			// Ready at the address the proxy forwards to: a restart on
			// fresh ports is ready there only once the target moved.
			p.probed(ready && p.target.Load().String() == r.child.WebhookURL(), sent.Add(opts.Drain))
			mu.Lock()
			rep.Probes++
			switch {
			case !ready && unreadySince.IsZero():
				unreadySince = time.Now()
			case ready && !unreadySince.IsZero():
				rep.Unready = append(rep.Unready, time.Since(unreadySince))
				unreadySince = time.Time{}
			}
			mu.Unlock()
		}
	})

	for k := 1; k <= opts.Restarts; k++ {
		threshold := int64(r.opts.Orders * k / (opts.Restarts + 1))
		for r.created.Load() < threshold {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
		pid, at := r.child.PID(), time.Now()
		fmt.Fprintf(r.out, "%5.1fs  SIGTERM pid %d after %d orders\n", time.Since(r.start).Seconds(), pid, r.created.Load())
		if err := r.child.Stop(); err != nil {
			return fmt.Errorf("SIGTERM %d to pid %d: %w", k, pid, err)
		}
		rep.Stops = append(rep.Stops, time.Since(at))
		if err := r.child.Restart(ctx); err != nil {
			return fmt.Errorf("restart after SIGTERM %d: %w", k, err)
		}
		p.SetTarget(r.child.WebhookURL())
		// Until the probe has seen it ready, as a rolling restart waits
		// before it stops the next one: the balancer sends again only then.
		for !p.readyNow() {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(opts.ProbeEvery / 5):
			}
		}
		fmt.Fprintf(r.out, "%5.1fs  pid %d exited 0 after %s; restarted: pid %d, ready\n",
			time.Since(r.start).Seconds(), pid, rep.Stops[k-1].Round(time.Millisecond), r.child.PID())
	}
	return nil
}

func printRestartReport(w io.Writer, r *restartReport) {
	stops := make([]string, len(r.Stops))
	for i, d := range r.Stops {
		stops[i] = d.Round(time.Millisecond).String()
	}
	unready := make([]string, len(r.Unready))
	for i, d := range r.Unready {
		unready[i] = d.Round(time.Millisecond).String()
	}
	fmt.Fprintf(w, "restarts: %d SIGTERMs, each to exit 0 in %s; /readyz not ready for %s (%d probes)\n",
		len(r.Stops), strings.Join(stops, ", "), strings.Join(unready, ", "), r.Probes)
	fmt.Fprintf(w, "  webhooks held back by the balancer (503) while not ready: %d; forwarded while ready and refused: %d, answered non-2xx: %d\n",
		r.HeldBack, r.Refused, r.Rejected)
	for _, p := range r.extraProblems {
		fmt.Fprintf(w, "FAIL: %s\n", p)
	}
}
