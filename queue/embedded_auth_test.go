package queue

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestEmbeddedPortNeedsPassword: the embedded server's TCP port refuses a
// client without the password, or with a wrong one, and takes one with it;
// the password is generated owner-only in the data directory, survives a
// restart, and the in-process connection keeps working.
func TestEmbeddedPortNeedsPassword(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "nats-password")
	start := func() *Embedded {
		e, err := StartEmbedded(EmbeddedConfig{StoreDir: filepath.Join(dir, "jetstream"), Port: -1, PasswordFile: pwFile})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := start()
	fi, err := os.Stat(pwFile)
	if err != nil {
		t.Fatalf("no password file: %v", err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("password file mode %04o, want 0600", perm)
	}
	b, err := os.ReadFile(pwFile)
	if err != nil {
		t.Fatal(err)
	}
	password := strings.TrimSpace(string(b))
	if len(password) < 32 {
		t.Fatalf("password %d characters, want a long random one", len(password))
	}
	dial := func(opts ...nats.Option) error {
		// A handshake has 15 s: the server's bcrypt check of a password
		// takes seconds on a loaded machine.
		nc, err := nats.Connect(e.ClientURL(), append(opts, nats.Timeout(15*time.Second), nats.NoReconnect())...)
		if err != nil {
			return err
		}
		defer nc.Close()
		return nc.Publish("ordersync.forged", []byte("x"))
	}
	for name, opts := range map[string][]nats.Option{
		"no credentials": nil,
		"wrong password": {nats.UserInfo(EmbeddedUser, "guess")},
		"a token":        {nats.Token(password)},
	} {
		if err := dial(opts...); !errors.Is(err, nats.ErrAuthorization) {
			t.Errorf("%s: connect = %v, want %v", name, err, nats.ErrAuthorization)
		}
	}
	if err := dial(nats.UserInfo(EmbeddedUser, password)); err != nil {
		t.Errorf("with the password: %v", err)
	}
	nc, err := e.Connect("in-process")
	if err != nil {
		t.Fatalf("in-process connection: %v", err)
	}
	q := newQueue(t, nc, uniqueConfig())
	if publish(t, q, testEvent(1)) {
		t.Error("first publish reported duplicate")
	}
	nc.Close()
	e.Shutdown()

	// A restart reuses the password.
	e = start()
	defer e.Shutdown()
	if err := dial(nats.UserInfo(EmbeddedUser, password)); err != nil {
		t.Errorf("after a restart, with the same password: %v", err)
	}
	if _, err := e.Connect("in-process"); err != nil {
		t.Errorf("in-process connection after a restart: %v", err)
	}
}
