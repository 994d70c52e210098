// Package quietlog logs a failure that repeats without flooding the log:
// its first occurrence at once, then at most one line per interval per
// cause summing up the occurrences since (how many, the first and last
// time). A webhook refused a thousand times a second while a disk is full
// is one line, then one every interval; the counts that matter per
// occurrence are in metrics.
package quietlog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultInterval is the interval the pipeline's repeated failures are
// summed up over.
const DefaultInterval = 10 * time.Second

// Log logs repeated failures by cause. Its zero value is not usable: make
// it with New. Close it to write the summaries still pending.
type Log struct {
	logger   *slog.Logger
	interval time.Duration

	mu     sync.Mutex
	causes map[string]*cause
	closed bool
}

// cause is a failure logged within the last interval: the occurrences
// since its last line, and the timer that writes their summary.
type cause struct {
	level       slog.Level
	msg         string
	args        []any // the last occurrence's
	n           int
	first, last time.Time
	timer       *time.Timer
}

// New returns a Log writing to logger, one line per cause per interval at
// most (DefaultInterval when interval is 0).
func New(logger *slog.Logger, interval time.Duration) *Log {
	if interval <= 0 {
		interval = DefaultInterval
	}
	return &Log{logger: logger, interval: interval, causes: map[string]*cause{}}
}

// Log logs msg with args at level, under the cause key: at once when it
// had no line within the interval; otherwise the occurrence is counted,
// and one line at the interval's end sums up those counted (the message
// and the last occurrence's args, with repeated, first and last). Keys
// come from a small fixed set (an operation, an error's kind), not from
// anything per request.
func (l *Log) Log(level slog.Level, key, msg string, args ...any) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.logger.Log(context.Background(), level, msg, args...)
		return
	}
	c := l.causes[key]
	if c == nil {
		c = &cause{}
		l.causes[key] = c
		c.timer = time.AfterFunc(l.interval, func() { l.summarise(key) })
		l.logger.Log(context.Background(), level, msg, args...)
		return
	}
	if c.n == 0 {
		c.first = now
	}
	c.level, c.msg, c.args, c.last = level, msg, args, now
	c.n++
}

// summarise ends a cause's interval: the summary of what it counted, and
// another interval, or nothing and the cause forgotten.
func (l *Log) summarise(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.causes[name]
	if c == nil || l.closed {
		return
	}
	if c.n == 0 {
		delete(l.causes, name)
		return
	}
	l.write(c)
	c.timer.Reset(l.interval)
}

// write logs c's summary and resets its count.
func (l *Log) write(c *cause) {
	args := append(append([]any(nil), c.args...), "repeated", c.n, "first", c.first, "last", c.last)
	l.logger.Log(context.Background(), c.level, c.msg, args...)
	c.n, c.args = 0, nil
}

// Close writes the summaries pending and stops the timers; later
// occurrences are logged as they come.
func (l *Log) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	for name, c := range l.causes {
		c.timer.Stop()
		if c.n > 0 {
			l.write(c)
		}
		delete(l.causes, name)
	}
}
