// Package leak fails a package's tests when they leave goroutines running:
// every package's TestMain ends in Main, so a stage that starts a goroutine
// nobody waits for is caught where it is written, not as a flaky neighbour.
package leak

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// ignored are goroutines that outlive a package's tests by design, each
// named by its exact function, never by its package: a check that ignored
// a whole dependency would miss our own goroutines blocked inside it.
var ignored = []goleak.Option{
	// fasthttp's default dialer cleans its DNS cache for the life of the
	// process (the lab's load poster uses it).
	goleak.IgnoreTopFunction("github.com/valyala/fasthttp.(*TCPDialer).tcpAddrsClean"),
	// A fasthttp.Client's cleaners poll every 10 s and stop once its idle
	// connections are gone, which outlasts a short test.
	goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*Client).mCleaner"),
	goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"),
	// A JetStream fetch ends at its pull's expiry, not when the connection
	// closes; queue's long poll hands back what a cancelled pull still
	// brings until then. Both end within the poll's wait after Close.
	goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*pullConsumer).fetch.func1"),
	goleak.IgnoreTopFunction("github.com/ordersync/ordersync/queue.(*eventSource).collect.func2"),
}

// Main runs the tests, then the cleanups (closing what TestMain opened for
// the whole package), then fails the run if any goroutine other than the
// ignored ones is still alive. A failing run is not checked: its goroutines
// are usually the failure's own, and the failure already says so.
func Main(m *testing.M, cleanups ...func()) {
	os.Exit(run(m, cleanups...))
}

func run(m *testing.M, cleanups ...func()) int {
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	if code != 0 {
		return code
	}
	if err := goleak.Find(ignored...); err != nil {
		fmt.Fprintf(os.Stderr, "leak: goroutines left running after the tests: %v\n", err)
		return 1
	}
	return 0
}
