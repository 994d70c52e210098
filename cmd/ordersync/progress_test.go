package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestProgress: on a terminal the line is rewritten in place, at most every
// progressEvery, and cleared at the end; off, nothing is written.
func TestProgress(t *testing.T) {
	// Fake time: the second line is within progressEvery however slow the
	// machine, and the wait past it costs nothing.
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		p := newProgress(&buf, true)
		p.show("reconciling: 1 of 3 checked")
		p.show("reconciling: 2 of 3 checked") // within progressEvery: skipped
		time.Sleep(progressEvery)
		p.show("reconciling: 3 of 3")
		p.done()
		want := "\rreconciling: 1 of 3 checked\rreconciling: 3 of 3        \r" + strings.Repeat(" ", 27) + "\r"
		if buf.String() != want {
			t.Errorf("wrote %q, want %q", buf.String(), want)
		}
	})

	var buf bytes.Buffer
	off := newProgress(&buf, false)
	off.show("reconciling: 1 of 3 checked")
	off.done()
	if buf.Len() != 0 {
		t.Errorf("progress that is off wrote %q", buf.String())
	}

	if isTerminal(&buf) {
		t.Error("a buffer was taken for a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("a file was taken for a terminal")
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if !isTerminal(tty) {
			t.Error("/dev/tty was not taken for a terminal")
		}
	}
}
