package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/testcert"
	"github.com/ordersync/ordersync/webhook"
)

// TestWebhookTLS: with a certificate the receiver speaks only TLS.
func TestWebhookTLS(t *testing.T) {
	t.Parallel()
	cert := testcert.New(t)
	cfg := app.DefaultConfig()
	cfg.APIBaseURL, cfg.SecretKey, cfg.WebhookSecrets = "http://127.0.0.1:1", "sk", []string{"whsec"}
	cfg.DataDir = t.TempDir()
	cfg.DatabaseURL = cfg.DataDir + "/m.db"
	cfg.Listen, cfg.AdminListen, cfg.ReconcileInterval, cfg.ShutdownDrain = "127.0.0.1:0", "127.0.0.1:0", 0, 0
	cfg.TLSCertFile, cfg.TLSKeyFile = cert.CertFile, cert.KeyFile
	p, err := app.NewProgram(context.Background(), cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		p.Close()
	})
	if !strings.HasPrefix(p.WebhookURL(), "https://") {
		t.Fatalf("webhook URL %s is not https", p.WebhookURL())
	}
	body := []byte(`{"orderId":"1","orderType":"COUPON_APP","type":"Created"}`)
	post := func(c *http.Client, url string) (int, string, error) {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set(webhook.SignatureHeader, webhook.Sign("whsec", body))
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	trusting := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: cert.Pool}}}
	status, b, err := post(trusting, p.WebhookURL())
	if err != nil || status != http.StatusOK || !strings.Contains(b, "ignored") {
		t.Fatalf("signed webhook over TLS: %d %s %v", status, b, err)
	}
	if _, _, err := post(&http.Client{Timeout: 5 * time.Second}, p.WebhookURL()); err == nil {
		t.Error("a client that does not trust the certificate got through")
	}
	if status, _, _ := post(&http.Client{Timeout: 5 * time.Second}, strings.Replace(p.WebhookURL(), "https://", "http://", 1)); status == http.StatusOK {
		t.Error("plain HTTP was answered 200")
	}
}
