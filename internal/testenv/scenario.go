package testenv

import (
	"os"
	"testing"
)

// ScenariosEnv is the environment variable that runs the whole-scenario
// tests: the lab's runs of the real ordersync binary under faults, each
// tens of seconds of a pipeline converging. `go test ./...` leaves them
// out so that it stays a quick check; .ci/run runs them in a step of
// their own (docs/testing.md, "The suite's time").
const ScenariosEnv = "ORDERSYNC_TEST_SCENARIOS"

// Scenario skips the calling whole-scenario test, in package pkg (as
// given to go test, e.g. ./cmd/ordersync-lab), unless ScenariosEnv is set.
func Scenario(tb testing.TB, pkg string) {
	tb.Helper()
	if os.Getenv(ScenariosEnv) == "" {
		tb.Skipf("a whole-scenario run (tens of seconds); run it with %s=1 go test -run '^%s$' %s (.ci/run does, in its own step)", ScenariosEnv, tb.Name(), pkg)
	}
}
