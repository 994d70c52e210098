package main

import (
	"strings"
	"testing"
)

// TestFlagsWhereTheyApply: serve takes every setting as a typed flag with
// its default; a command that reads the mirror takes only what reaches it.
func TestFlagsWhereTheyApply(t *testing.T) {
	serve, err := runCLI(t, "serve", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--workers int", "(default 64)", "--upstream-timeout duration", "(default 10s)",
		"--migrate-on-start ", "--webhook-secret strings", `--log-format string`, `(default "text")`} {
		if !strings.Contains(serve, want) {
			t.Errorf("serve --help lacks %q", want)
		}
	}
	if strings.Contains(serve, "--reconcile-budget") || strings.Contains(serve, "--reconcile-interval") {
		t.Errorf("serve --help offers a replaced setting:\n%s", serve)
	}
	if strings.Contains(serve, "string[=") {
		t.Errorf("serve --help shows a boolean as a string:\n%s", serve)
	}
	for _, cmd := range [][]string{{"orders", "list"}, {"dlq", "list"}, {"migrate"}} {
		help, err := runCLI(t, append(cmd, "--help")...)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"--config", "--database-url", "--data-dir"} {
			if !strings.Contains(help, want) {
				t.Errorf("%v --help lacks %s", cmd, want)
			}
		}
		for _, unwanted := range []string{"--listen", "--tls-cert-file", "--workers", "--secret-key", "--admin-tokens"} {
			if strings.Contains(help, unwanted) {
				t.Errorf("%v --help offers %s, a setting of serve", cmd, unwanted)
			}
		}
	}
	links, _ := runCLI(t, "links", "create", "--help")
	if !strings.Contains(links, "--secret-key") || !strings.Contains(links, "--api-base-url") || strings.Contains(links, "--listen") {
		t.Errorf("links create --help: want the upstream's settings and not serve's:\n%s", links)
	}
}
