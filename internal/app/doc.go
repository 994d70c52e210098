// Package app is ordersync's wiring: the configuration (file, environment,
// flags, one parser per setting), the functions that build what serve and
// the CLI's commands share (wiring.go), Program, which builds the stages of
// one process for its roles, runs them with Run and Close and applies a
// reload (SIGHUP) in place, Local, what a one-shot command of the CLI opens
// beside a running serve, the probes of `ordersync check` (CheckQueue,
// NewUpstreamClient), and Stack, the simulator and a program in one
// process, which the demo and the end-to-end tests start. The operator's
// binary (cmd/ordersync) and the tests import it; the lab
// (cmd/ordersync-lab) runs that binary instead.
package app
