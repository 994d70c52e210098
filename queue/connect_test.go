package queue_test

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/ordersync/ordersync/internal/testcert"
	"github.com/ordersync/ordersync/queue"
)

// TestConnectTokenAndTLS: an external server that requires a token over
// TLS is reached with ConnConfig's Token and TLSCA, and refuses a wrong
// token or a client that does not trust its certificate.
func TestConnectTokenAndTLS(t *testing.T) {
	t.Parallel()
	cert := testcert.New(t)
	pair, err := tls.LoadX509KeyPair(cert.CertFile, cert.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, Authorization: "s3cret", JetStream: true, StoreDir: t.TempDir(),
		TLS: true, TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, TLSTimeout: 2,
		NoLog: true, NoSigs: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	url := strings.Replace(srv.ClientURL(), "nats://", "tls://", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	nc, err := queue.Connect(ctx, queue.ConnConfig{URL: url, Token: "s3cret", TLSCA: cert.CertFile})
	if err != nil {
		t.Fatalf("connect with token and CA: %v", err)
	}
	defer nc.Close()
	if _, err := queue.New(ctx, nc, queue.Config{SubjectPrefix: "tls", EventsStream: "TLS_EVENTS", OrdersStream: "TLS_ORDERS"}); err != nil {
		t.Fatalf("set up JetStream over TLS: %v", err)
	}
	for name, cfg := range map[string]queue.ConnConfig{
		"wrong token":    {URL: url, Token: "nope", TLSCA: cert.CertFile},
		"untrusted cert": {URL: url, Token: "s3cret"},
	} {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		if nc, err := queue.Connect(cctx, cfg); err == nil {
			nc.Close()
			t.Errorf("%s: connected", name)
		}
		ccancel()
	}
}
