package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := runCLI(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if want := buildVersion() + "\n"; out != want {
			t.Errorf("%v printed %q, want %q", args, out, want)
		}
		if !strings.HasPrefix(out, "ordersync ") || !strings.Contains(out, runtime.Version()) {
			t.Errorf("%v: %q lacks the name or the Go version %s", args, out, runtime.Version())
		}
	}
}

func TestFormatVersion(t *testing.T) {
	tests := []struct {
		name  string
		info  debug.BuildInfo
		stamp stamp
		want  string
	}{
		{"a tagged release", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "048eea1"}, {Key: "vcs.modified", Value: "false"}}},
			stamp{}, "ordersync v1.2.0, commit 048eea1, go1.26.8"},
		{"a checkout with local changes", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "048eea1"}, {Key: "vcs.modified", Value: "true"}}},
			stamp{}, "ordersync (devel), commit 048eea1 (modified), go1.26.8"},
		{"built without VCS stamping", debug.BuildInfo{GoVersion: "go1.26.8"},
			stamp{}, "ordersync (devel), commit unknown, go1.26.8"},
		{"a release build from a checkout", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "048eea1"}}},
			stamp{"0.1.0", "560ec5f", "2026-11-27T13:00:00Z"}, "ordersync 0.1.0, commit 560ec5f, 2026-11-27T13:00:00Z, go1.26.8"},
		{"a release build from an archive", debug.BuildInfo{GoVersion: "go1.26.8"},
			stamp{"0.1.0", "", "2026-11-27"}, "ordersync 0.1.0, commit unknown, 2026-11-27, go1.26.8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatVersion(&tt.info, tt.stamp); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
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
