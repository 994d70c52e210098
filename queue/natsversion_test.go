package queue

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestParseServerVersion(t *testing.T) {
	tests := []struct {
		in      string
		want    [3]int
		wantErr bool
	}{
		{"2.9.10", [3]int{2, 9, 10}, false},
		{"v2.15.2", [3]int{2, 15, 2}, false},
		{"2.11.0-RC.2", [3]int{2, 11, 0}, false},
		{"2.10", [3]int{}, true},
		{"2.x.1", [3]int{}, true},
		{"", [3]int{}, true},
	}
	for _, tt := range tests {
		got, err := parseServerVersion(tt.in)
		if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
			t.Errorf("parseServerVersion(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	order := []string{"2.2.6", "2.9.9", "2.9.10", "2.10.0", "2.15.2", "3.0.0"}
	for i := range order {
		for j := range order {
			a, _ := parseServerVersion(order[i])
			b, _ := parseServerVersion(order[j])
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := compareVersions(a, b); got != want {
				t.Errorf("compareVersions(%s, %s) = %d, want %d", order[i], order[j], got, want)
			}
		}
	}
}

// TestCheckServerVersionEmbedded: the embedded server is the current
// release, well past the oldest supported.
func TestCheckServerVersionEmbedded(t *testing.T) {
	t.Parallel()
	nc := connect(t, startEmbedded(t, t.TempDir(), 0))
	if err := CheckServerVersion(nc); err != nil {
		t.Fatalf("embedded nats-server %s: %v", nc.ConnectedServerVersion(), err)
	}
	var unsupported *UnsupportedServerError
	if err := error(&UnsupportedServerError{Version: "2.8.4"}); !errors.As(err, &unsupported) || !strings.Contains(err.Error(), OldestServerVersion) {
		t.Fatalf("UnsupportedServerError = %v", err)
	}
}

// TestExternalNATSServerVersion proves which server the external tests ran
// against: it logs the version, checks it is supported, and when
// ORDERSYNC_TEST_NATS_VERSION is set (CI sets it for each server it runs)
// that it is exactly that release.
func TestExternalNATSServerVersion(t *testing.T) {
	t.Parallel()
	natsURL := os.Getenv("ORDERSYNC_TEST_NATS_URL")
	if natsURL == "" {
		t.Skip("ORDERSYNC_TEST_NATS_URL not set (e.g. nats://127.0.0.1:4222): skipping the external NATS version check")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := Connect(ctx, ConnConfig{URL: natsURL, Name: t.Name()})
	if err != nil {
		t.Fatalf("Connect %s: %v", natsURL, err)
	}
	defer nc.Close()
	got := nc.ConnectedServerVersion()
	t.Logf("external nats-server %s at %s", got, natsURL)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AccountInfo(ctx); err != nil {
		t.Fatalf("external nats-server %s: JetStream not available: %v", got, err)
	}
	if err := CheckServerVersion(nc); err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimPrefix(os.Getenv("ORDERSYNC_TEST_NATS_VERSION"), "v"); want != "" && got != want {
		t.Fatalf("external nats-server is %s, want %s (ORDERSYNC_TEST_NATS_VERSION)", got, want)
	}
}

// TestConnectRefusesOldServer: Connect refuses a server older than
// OldestServerVersion with an *UnsupportedServerError naming its version.
// The server is a fake that speaks just enough of the protocol (INFO, then
// PONG to every PING) to complete the handshake as nats-server 2.8.4.
func TestConnectRefusesOldServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				fmt.Fprintf(conn, "INFO {\"server_id\":\"fake\",\"version\":\"2.8.4\",\"proto\":1,\"max_payload\":1048576,\"headers\":true}\r\n")
				lines := bufio.NewScanner(conn)
				for lines.Scan() {
					if strings.HasPrefix(lines.Text(), "PING") {
						fmt.Fprint(conn, "PONG\r\n")
					}
				}
			}()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := Connect(ctx, ConnConfig{URL: "nats://" + ln.Addr().String(), Name: t.Name()})
	if err == nil {
		nc.Close()
		t.Fatal("Connect to nats-server 2.8.4 succeeded")
	}
	var old *UnsupportedServerError
	if !errors.As(err, &old) || old.Version != "2.8.4" {
		t.Fatalf("Connect error = %v, want an UnsupportedServerError for 2.8.4", err)
	}
}
