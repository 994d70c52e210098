package child

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// impostor answers /readyz with 200 on a loopback port, as another child
// does that took a port picked for this one.
func impostor(t *testing.T) int {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port
}

func fakeConfig(t *testing.T) Config {
	dir := t.TempDir()
	return Config{
		Exe: os.Args[0], Env: []string{fakeServeEnv + "=1"},
		DataDir: filepath.Join(dir, "data"), LogPath: filepath.Join(dir, "child.log"),
		APIBaseURL: "http://127.0.0.1:1", SecretKey: "sk_test",
	}
}

// checkOwnPorts: the child runs, on an admin port other than the
// impostor's, and answers there itself.
func checkOwnPorts(t *testing.T, c *Process, taken int) {
	t.Helper()
	if c.PID() == 0 {
		t.Fatal("Start returned without a running child")
	}
	if got := c.Ports().Admin; got == taken {
		t.Fatalf("the child's admin port is %d, held by another process; log:\n%s", got, c.LogTail(2000))
	}
	if owns, err := listensOn(c.PID(), c.Ports().Admin); err != nil || !owns {
		t.Fatalf("the child does not hold its admin port %d (%v); log:\n%s", c.Ports().Admin, err, c.LogTail(2000))
	}
	if log := c.LogTail(4000); !strings.Contains(log, "address already in use") {
		t.Errorf("the child never met the taken port; log:\n%s", log)
	}
}

// TestStartPortTaken: a port picked free and taken before the child binds
// it, by a process that answers /readyz, is retried on fresh ports; the
// answer of the taker is not the child's readiness.
func TestStartPortTaken(t *testing.T) {
	taken := impostor(t)
	calls := 0
	pickPorts = func(n int) ([]int, error) {
		calls++
		ports, err := PickPorts(n)
		if calls == 1 && err == nil {
			ports[1] = taken
		}
		return ports, err
	}
	t.Cleanup(func() { pickPorts = PickPorts })
	c, err := Start(context.Background(), fakeConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Kill()
	checkOwnPorts(t, c, taken)
}

// TestRestartPortTaken: a restart finds its old admin port taken by a
// process that answers /readyz, and moves to fresh ports.
func TestRestartPortTaken(t *testing.T) {
	c, err := Start(context.Background(), fakeConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Kill()
	c.Kill()
	old := c.Ports().Admin
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(old)))
	if err != nil {
		t.Skipf("the old admin port was taken before the test could: %v", err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}}
	srv.Start()
	defer srv.Close()
	if err := c.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkOwnPorts(t, c, old)
}
