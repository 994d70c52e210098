package child

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"testing"

	"github.com/ordersync/ordersync/internal/leak"
)

// fakeServeEnv makes the test binary a stand-in for `ordersync serve`
// (see fakeServe).
const fakeServeEnv = "ORDERSYNC_TEST_CHILD_FAKE_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(fakeServeEnv) == "1" {
		fakeServe(os.Args[1:])
		return
	}
	leak.Main(m)
}

// fakeServe binds the webhook and admin addresses as `ordersync serve`
// does, exits 1 when one is taken, and answers /readyz with 200.
func fakeServe(args []string) {
	f := flag.NewFlagSet("serve", flag.ExitOnError)
	listen := f.String("listen", "", "")
	admin := f.String("admin-listen", "", "")
	f.String("data-dir", "", "")
	f.Int("nats-port", 0, "")
	if len(args) == 0 || args[0] != "serve" {
		fmt.Fprintln(os.Stderr, "fake serve: want serve, got", args)
		os.Exit(2)
	}
	_ = f.Parse(args[1:])
	var adminLn net.Listener
	for _, addr := range []string{*listen, *admin} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake serve:", err)
			os.Exit(1)
		}
		adminLn = ln
	}
	_ = http.Serve(adminLn, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
}
