package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/ordersync/ordersync/internal/datadir"
	"github.com/ordersync/ordersync/store"
)

// diskfullOptions size a disk-full run.
type diskfullOptions struct {
	chaos chaosOptions
	// Size is the tmpfs the data directory lives on.
	Size int64
	// Full is how long the disk stays full.
	Full time.Duration
	// MinFreeSpace is the pipeline's min_free_space; "off" lets the disk
	// fill until writes fail with ENOSPC.
	MinFreeSpace string
}

func defaultDiskfullOptions() diskfullOptions {
	c := defaultChaosOptions()
	c.Orders, c.Kills, c.ConvergeWithin = 1500, 0, 2*time.Minute
	return diskfullOptions{chaos: c, Size: 256 << 20, Full: 30 * time.Second}
}

func newDiskfullCommand() *cobra.Command {
	opts := defaultDiskfullOptions()
	cmd := &cobra.Command{
		Use:   "diskfull",
		Short: "Fill the pipeline's disk under load, then free it, and prove it recovers by itself",
		Long: `diskfull runs the chaos run's pipeline and simulator (with its faults) on a
data directory mounted as a tmpfs of --size (it needs root to mount; it
says so otherwise). A third of the way through the orders it fills the
disk (to half the min_free_space watermark, or to the last byte with
--min-free-space off) and keeps it full for --full, then frees it. It
passes only if /readyz answered 503 while the disk was full, no restart
was needed, every simulator order is in the mirror with identical fields
within --converge-within of the disk emptying, every paid order has
exactly one PAID trigger, every webhook answered 2xx is in the event log,
no log message repeated more than once a second, and SQLite's
integrity_check is ok.`,
		Args: cobra.NoArgs,
		RunE: withBinary(func(cmd *cobra.Command, exe string) error {
			opts.chaos.exe = exe
			rep, err := runDiskfull(cmd.Context(), cmd.OutOrStdout(), opts)
			return verdict("diskfull", rep, err)
		}),
	}
	f := cmd.Flags()
	f.IntVar(&opts.chaos.Orders, "orders", opts.chaos.Orders, "orders to create through the pipeline")
	f.Uint64Var(&opts.chaos.Seed, "seed", opts.chaos.Seed, "seed of the buyers' choices and the simulator's faults")
	f.DurationVar(&opts.chaos.ConvergeWithin, "converge-within", opts.chaos.ConvergeWithin, "fail unless the mirror matches this long after the disk emptied")
	f.Int64Var(&opts.Size, "size", opts.Size, "bytes of the tmpfs holding the data directory")
	f.DurationVar(&opts.Full, "full", opts.Full, "how long the disk stays full")
	f.StringVar(&opts.MinFreeSpace, "min-free-space", "", "the pipeline's min_free_space (default its own; off: fill until writes fail)")
	f.BoolVar(&opts.chaos.Keep, "keep", false, "keep the pipeline's log and print where it is")
	f.BoolVar(&opts.chaos.Verbose, "verbose", false, "log the simulator's warnings to stderr")
	return cmd
}

// diskfullReport is a chaos report with what the disk did.
type diskfullReport struct {
	*chaosReport
	FullFor               time.Duration
	ReadyzRefused, Readyz int
	LogRepeats            map[string]int // message → most lines in one second
	Integrity             string
	FreeAtFill, Watermark uint64
	extraProblems         []string
}

func (r *diskfullReport) OK() bool {
	return r.chaosReport != nil && r.chaosReport.OK() && len(r.extraProblems) == 0
}

func runDiskfull(ctx context.Context, out io.Writer, opts diskfullOptions) (*diskfullReport, error) {
	rep := &diskfullReport{}
	mark, err := datadir.ParseWatermark(opts.MinFreeSpace)
	if err != nil {
		return nil, fmt.Errorf("--min-free-space %w", err)
	}
	var mnt string
	c := opts.chaos
	c.args = []string{"--log-format", "json"}
	if opts.MinFreeSpace != "" {
		c.env = append(c.env, "ORDERSYNC_MIN_FREE_SPACE="+opts.MinFreeSpace)
	}
	c.prepare = func(dataDir string) (func(), error) {
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return nil, err
		}
		if b, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", opts.Size), "tmpfs", dataDir).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("diskfull needs to mount a tmpfs (run as root): %v: %s", err, b)
		}
		mnt = dataDir
		// The cleanup runs once the pipeline stopped, before the tmpfs and
		// the mirror on it go.
		return func() {
			rep.Integrity = "ok"
			if db, err := store.Open(context.WithoutCancel(ctx), store.Config{URL: datadir.DatabaseFile(dataDir), Migrate: new(bool), CheckpointInterval: -1}); err != nil {
				rep.Integrity = err.Error()
			} else {
				if err := db.CheckIntegrity(context.WithoutCancel(ctx)); err != nil {
					rep.Integrity = err.Error()
				}
				db.Close()
			}
			_ = exec.Command("umount", "-l", dataDir).Run()
		}, nil
	}
	var logPath string
	var fullFrom, fullTo time.Time
	c.fault = func(ctx context.Context, r *chaosRun) error {
		logPath = r.rep.LogPath
		for r.created.Load() < int64(c.Orders/3) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
		free, total, err := statfs(mnt)
		if err != nil {
			return err
		}
		rep.FreeAtFill, rep.Watermark = free, mark.For(total)
		filler := filepath.Join(mnt, "filler")
		if err := fillTo(filler, mnt, rep.Watermark/2); err != nil {
			return err
		}
		fullFrom = time.Now()
		fmt.Fprintf(out, "%5.1fs  disk filled after %d orders (watermark %d bytes); full for %s\n", time.Since(r.start).Seconds(), r.created.Load(), rep.Watermark, opts.Full)
		for time.Since(fullFrom) < opts.Full {
			rep.Readyz++
			if res, err := http.Get(r.child.AdminURL() + "/readyz"); err == nil {
				if res.StatusCode == http.StatusServiceUnavailable {
					rep.ReadyzRefused++
				}
				res.Body.Close()
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(250 * time.Millisecond):
			}
		}
		if err := os.Remove(filler); err != nil {
			return err
		}
		fullTo = time.Now()
		rep.FullFor = fullTo.Sub(fullFrom)
		fmt.Fprintf(out, "%5.1fs  disk freed\n", time.Since(r.start).Seconds())
		return nil
	}
	// The child is stopped before the report is read back: the log is
	// complete and the mirror's file closed for the integrity check.
	c.Keep = true
	chaos, err := runChaos(ctx, out, c)
	rep.chaosReport = chaos
	if err != nil {
		return rep, err
	}
	defer func() {
		if !opts.chaos.Keep && rep.OK() {
			os.RemoveAll(filepath.Dir(chaos.DataDir))
		}
	}()
	if rep.Readyz > 0 && rep.ReadyzRefused == 0 {
		rep.extraProblems = append(rep.extraProblems, "/readyz never answered 503 while the disk was full")
	}
	if rep.LogRepeats, err = logRepeats(logPath, fullFrom, fullTo.Add(10*time.Second)); err != nil {
		return rep, err
	}
	for msg, n := range rep.LogRepeats {
		if n > 1 {
			rep.extraProblems = append(rep.extraProblems, fmt.Sprintf("log message %q written %d times in one second", msg, n))
		}
	}
	if rep.Integrity != "ok" {
		rep.extraProblems = append(rep.extraProblems, "the mirror's "+rep.Integrity)
	}
	printDiskfullReport(out, rep)
	return rep, nil
}

func statfs(dir string) (free, total uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return uint64(st.Bavail) * uint64(st.Bsize), uint64(st.Blocks) * uint64(st.Bsize), nil
}

// fillTo writes path until the filesystem at dir has at most leave bytes
// free, or none.
func fillTo(path, dir string, leave uint64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	chunk := make([]byte, 256<<10)
	for {
		free, _, err := statfs(dir)
		if err != nil {
			return err
		}
		if free <= leave {
			return nil
		}
		if uint64(len(chunk)) > free-leave && leave > 0 {
			chunk = chunk[:free-leave]
		}
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, unix.ENOSPC) {
				return nil
			}
			return err
		}
	}
}

// logRepeats reads the pipeline's JSON log and returns, per message, the
// most lines it had within one second between from and to.
func logRepeats(path string, from, to time.Time) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	perSecond := map[string]map[int64]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Time.Before(from) || line.Time.After(to) {
			continue
		}
		if perSecond[line.Msg] == nil {
			perSecond[line.Msg] = map[int64]int{}
		}
		perSecond[line.Msg][line.Time.Unix()]++
	}
	most := map[string]int{}
	for msg, secs := range perSecond {
		for _, n := range secs {
			most[msg] = max(most[msg], n)
		}
	}
	return most, sc.Err()
}

func printDiskfullReport(w io.Writer, r *diskfullReport) {
	fmt.Fprintf(w, "disk: full for %s (free %d bytes before, watermark %d); /readyz 503 in %d of %d probes while full; integrity_check %s\n",
		r.FullFor.Round(time.Millisecond), r.FreeAtFill, r.Watermark, r.ReadyzRefused, r.Readyz, r.Integrity)
	msgs := make([]string, 0, len(r.LogRepeats))
	for m := range r.LogRepeats {
		msgs = append(msgs, m)
	}
	sort.Strings(msgs)
	for _, m := range msgs {
		fmt.Fprintf(w, "  log: %q at most %d a second\n", m, r.LogRepeats[m])
	}
	for _, p := range r.extraProblems {
		fmt.Fprintf(w, "FAIL: %s\n", p)
	}
}
