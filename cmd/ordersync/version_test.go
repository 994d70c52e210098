package main

import (
	"github.com/ordersync/ordersync/internal/build"
	"runtime"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := runCLI(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if want := build.Read().String() + "\n"; out != want {
			t.Errorf("%v printed %q, want %q", args, out, want)
		}
		if !strings.HasPrefix(out, "ordersync ") || !strings.Contains(out, runtime.Version()) {
			t.Errorf("%v: %q lacks the name or the Go version %s", args, out, runtime.Version())
		}
	}
}

// TestHelpGroups holds the top-level help to its groups: each command is
// listed under the title of its group, and the operator's commands come
// before the lab's.
func TestHelpGroups(t *testing.T) {
	out, err := runCLI(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	groups := []struct {
		title    string
		commands []string
	}{
		{"Run the service:", []string{"serve", "migrate", "reconcile"}},
		{"Orders, payment links, dead letters, fulfilment endpoints and the audit trail:", []string{"orders", "links", "dlq", "endpoints", "audit"}},
		{"Try it without an account:", []string{"demo", "sim"}},
		{"Additional Commands:", []string{"version"}},
	}
	for _, lab := range []string{"chaos", "loadtest", "multiproc"} {
		if strings.Contains(out, "\n  "+lab+" ") {
			t.Errorf("ordersync --help lists %s, a command of the lab (ordersync-lab)", lab)
		}
	}
	sections := map[string]string{}
	for _, block := range strings.Split(out, "\n\n") {
		title, body, _ := strings.Cut(block, "\n")
		sections[title] = body
	}
	last := -1
	for _, g := range groups {
		body, ok := sections[g.title]
		if !ok {
			t.Errorf("help has no group %q:\n%s", g.title, out)
			continue
		}
		if at := strings.Index(out, g.title); at < last {
			t.Errorf("group %q comes before the one listed above it", g.title)
		} else {
			last = at
		}
		for _, c := range g.commands {
			if !strings.Contains(body, "\n  "+c+" ") && !strings.HasPrefix(body, "  "+c+" ") {
				t.Errorf("group %q lacks %s:\n%s", g.title, c, body)
			}
		}
	}
}

// TestReadCommandsTakeJSON: every command that reads something prints a
// table by default and JSON with --json.
func TestReadCommandsTakeJSON(t *testing.T) {
	for _, cmd := range [][]string{
		{"orders", "list"}, {"orders", "show"}, {"orders", "events"}, {"orders", "track"},
		{"dlq", "list"}, {"dlq", "show"}, {"reconcile"},
		{"endpoints", "list"}, {"endpoints", "show"}, {"endpoints", "dead-letters"},
	} {
		help, err := runCLI(t, append(cmd, "--help")...)
		if err != nil {
			t.Fatalf("%v --help: %v", cmd, err)
		}
		if !strings.Contains(help, "--json") {
			t.Errorf("%v has no --json", cmd)
		}
	}
}

// TestGroupHelp: each command that groups others lists them in its help.
func TestGroupHelp(t *testing.T) {
	for group, subs := range map[string][]string{
		"orders":    {"list", "show", "events", "track"},
		"links":     {"create"},
		"dlq":       {"list", "show", "replay"},
		"endpoints": {"add", "list", "show", "update", "remove", "rotate-secret", "test", "replay", "dead-letters", "replay-dead-letter", "listen"},
	} {
		help, err := runCLI(t, group, "--help")
		if err != nil {
			t.Fatalf("%s --help: %v", group, err)
		}
		for _, sub := range subs {
			if !strings.Contains(help, "\n  "+sub+" ") {
				t.Errorf("%s --help does not list %s:\n%s", group, sub, help)
			}
		}
	}
}
