package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestLabCommands: the lab's help lists its runs and the flag that
// picks the ordersync binary.
func TestLabCommands(t *testing.T) {
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\n  chaos ", "\n  diskfull ", "\n  loadtest ", "\n  multiproc ", "\n  idle ", "\n  pages ", "--ordersync string"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("ordersync-lab --help lacks %q:\n%s", want, out.String())
		}
	}
}

// TestOrdersyncBinaryFlag: --ordersync names the binary the lab runs, and a
// path that does not exist is refused before anything starts.
func TestOrdersyncBinaryFlag(t *testing.T) {
	t.Cleanup(func() { binaryPath = "" })
	binaryPath = testBinary
	if got, err := ordersyncBinary(t.Context(), &bytes.Buffer{}); err != nil || got != testBinary {
		t.Errorf("ordersyncBinary with --ordersync %s = %q, %v", testBinary, got, err)
	}
	binaryPath = t.TempDir() + "/missing"
	if _, err := ordersyncBinary(t.Context(), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--ordersync") {
		t.Errorf("a missing --ordersync binary: %v, want an error naming the flag", err)
	}
}

type report bool

func (r report) OK() bool { return bool(r) }

// TestVerdict: a run that could not finish fails with its error; one that
// finished fails when a guarantee did not hold, naming the run.
func TestVerdict(t *testing.T) {
	if err := verdict("chaos", report(true), nil); err != nil {
		t.Errorf("a passing run: %v", err)
	}
	if err := verdict("chaos", report(false), nil); err == nil || err.Error() != "chaos test failed" {
		t.Errorf("a failing run: %v", err)
	}
	cut := errors.New("cut off")
	if err := verdict("multiproc", nil, cut); !errors.Is(err, cut) {
		t.Errorf("a run that could not finish: %v", err)
	}
}
