package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progress shows the state of long work on one terminal line, rewritten in
// place at most every progressEvery, and nothing at all when off (not a
// terminal, or --json).
type progress struct {
	w    io.Writer
	on   bool
	mu   sync.Mutex
	last time.Time
	wide int // the longest line shown, to blank it out
}

const progressEvery = 200 * time.Millisecond

func newProgress(w io.Writer, on bool) *progress { return &progress{w: w, on: on} }

// show puts line on the terminal unless one went up less than
// progressEvery ago.
func (p *progress) show(line string) {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if now := time.Now(); now.Sub(p.last) >= progressEvery {
		p.last = now
		p.wide = max(p.wide, len(line))
		fmt.Fprintf(p.w, "\r%-*s", p.wide, line)
	}
}

// done clears the line, so the report that follows starts clean.
func (p *progress) done() {
	if !p.on || p.wide == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.wide))
}

// isTerminal reports whether w is a terminal (a character device), where
// progress belongs; a pipe, a file or a test's buffer is not.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
