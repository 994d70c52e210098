package quietlog

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// records keeps the records a logger writes.
type records struct {
	mu  sync.Mutex
	all []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, rec.Clone())
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

func (r *records) get() []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]slog.Record(nil), r.all...)
}

func attrs(rec slog.Record) map[string]slog.Value {
	m := map[string]slog.Value{}
	rec.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value; return true })
	return m
}

// TestFirstAtOnceThenOneSummaryPerInterval, on synctest's fake clock: the
// first occurrence is logged at once; the next ones within the interval
// are summed up in one line at its end (count, first and last time, the
// last occurrence's fields); a quiet interval forgets the cause, so the
// next occurrence is logged at once again; causes are apart.
func TestFirstAtOnceThenOneSummaryPerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &records{}
		l := New(slog.New(rec), time.Second)
		defer l.Close()
		start := time.Now()

		l.Log(slog.LevelWarn, "publish", "webhook not queued", "n", 0)
		if got := len(rec.get()); got != 1 {
			t.Fatalf("after the first occurrence: %d lines, want 1", got)
		}
		// 100 more within the first interval, 10 ms apart.
		for i := 1; i <= 99; i++ {
			time.Sleep(10 * time.Millisecond)
			l.Log(slog.LevelWarn, "publish", "webhook not queued", "n", i)
		}
		l.Log(slog.LevelError, "audit", "record audit failed")
		if got := len(rec.get()); got != 2 {
			t.Fatalf("within the interval: %d lines, want 2 (one per cause)", got)
		}
		time.Sleep(start.Add(time.Second).Sub(time.Now())) // the bubble's clock, to the interval's end
		synctest.Wait()
		lines := rec.get()
		if len(lines) != 3 {
			t.Fatalf("after the interval: %d lines, want 3", len(lines))
		}
		sum := lines[2]
		a := attrs(sum)
		if sum.Message != "webhook not queued" || sum.Level != slog.LevelWarn || a["repeated"].Int64() != 99 || a["n"].Int64() != 99 {
			t.Fatalf("summary %q %v %v, want the message at WARN with repeated=99 and the last occurrence's n=99", sum.Message, sum.Level, a)
		}
		if first, last := a["first"].Time(), a["last"].Time(); !first.Equal(start.Add(10*time.Millisecond)) || !last.Equal(start.Add(990*time.Millisecond)) {
			t.Errorf("summary first %v last %v, want 10ms and 990ms after the start", first.Sub(start), last.Sub(start))
		}
		// The audit cause, quiet since its first line, wrote no summary,
		// and is forgotten: its next occurrence is logged at once.
		time.Sleep(time.Second) // the bubble's clock, a quiet interval
		synctest.Wait()
		l.Log(slog.LevelError, "audit", "record audit failed")
		if got := len(rec.get()); got != 4 {
			t.Fatalf("an occurrence after a quiet interval: %d lines, want 4", got)
		}
	})
}

// TestFloodIsOneLinePerInterval: 10,000 occurrences over ten seconds of
// fake time are at most one line per interval, and the summaries with the
// first line count every occurrence.
func TestFloodIsOneLinePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &records{}
		l := New(slog.New(rec), time.Second)
		for range 10_000 {
			l.Log(slog.LevelWarn, "publish", "webhook not queued")
			time.Sleep(time.Millisecond) // the bubble's clock
		}
		l.Close()
		lines := rec.get()
		if len(lines) > 11 {
			t.Fatalf("%d lines for 10s of failures, want at most 11", len(lines))
		}
		total := 1
		for i, line := range lines {
			if i > 0 && line.Time.Sub(lines[i-1].Time) < time.Second && i != len(lines)-1 {
				t.Errorf("lines %d and %d %s apart, want an interval", i-1, i, line.Time.Sub(lines[i-1].Time))
			}
			if r, ok := attrs(line)["repeated"]; ok {
				total += int(r.Int64())
			}
		}
		if total != 10_000 {
			t.Errorf("the lines count %d occurrences, want 10000", total)
		}
	})
}
