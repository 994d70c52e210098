package app

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/ordersync/ordersync/internal/datadir"
	"github.com/ordersync/ordersync/webhook"
)

// switchableDisk is a statfs whose free space the test switches.
type switchableDisk struct {
	mu   sync.Mutex
	free uint64
}

func (d *switchableDisk) set(free uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.free = free
}

func (d *switchableDisk) statfs(string) (datadir.Usage, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return datadir.Usage{Free: d.free, Total: 10 << 30}, nil
}

// TestLowDiskRefusesWebhooksAndReadiness: below min_free_space serve
// answers webhooks 503 with Retry-After and /readyz 503 naming the cause;
// back above it, both recover by themselves.
func TestLowDiskRefusesWebhooksAndReadiness(t *testing.T) {
	disk := &switchableDisk{free: 5 << 30}
	st := startTestStack(t, StackOptions{Configure: func(c *Config) {
		c.MinFreeSpace = "1GiB"
		c.statfs = disk.statfs
	}})
	p := st.Program
	secret := p.Config().WebhookSecrets[0]
	n := 0
	send := func() *http.Response {
		t.Helper()
		n++
		body := []byte(`{"orderId":"` + string(rune('0'+n)) + `","orderType":"FASTLINK_CHARGE","type":"Created"}`)
		req, _ := http.NewRequest("POST", p.WebhookURL(), bytes.NewReader(body))
		req.Header.Set(webhook.SignatureHeader, webhook.Sign(secret, body))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	readyz := func() (int, string) {
		t.Helper()
		res, err := http.Get(p.AdminURL() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if res := send(); res.StatusCode != 200 {
		t.Fatalf("with room: webhook answered %d, want 200", res.StatusCode)
	}
	if code, body := readyz(); code != 200 {
		t.Fatalf("with room: /readyz %d %s, want 200", code, body)
	}

	disk.set(512 << 20)
	p.space.Poll()
	if res := send(); res.StatusCode != 503 || res.Header.Get("Retry-After") == "" {
		t.Fatalf("below the watermark: webhook answered %d (Retry-After %q), want 503 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if code, body := readyz(); code != 503 || !strings.Contains(body, "low on disk space") {
		t.Fatalf("below the watermark: /readyz %d %q, want 503 naming the low disk space", code, body)
	}
	if low := lowDirs(t, p); low != "data,database,jetstream" {
		t.Errorf("ordersync_disk_low is 1 for %q, want every watched dir", low)
	}

	disk.set(2 << 30)
	p.space.Poll()
	if res := send(); res.StatusCode != 200 {
		t.Fatalf("back above the watermark: webhook answered %d, want 200", res.StatusCode)
	}
	if code, body := readyz(); code != 200 {
		t.Fatalf("back above the watermark: /readyz %d %s, want 200", code, body)
	}
	if low := lowDirs(t, p); low != "" {
		t.Errorf("back above the watermark: ordersync_disk_low is 1 for %q", low)
	}
}

// lowDirs lists the dirs whose ordersync_disk_low is 1.
func lowDirs(t *testing.T, p *Program) string {
	t.Helper()
	families, err := p.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var low []string
	for _, f := range families {
		if f.GetName() != "ordersync_disk_low" {
			continue
		}
		for _, m := range f.Metric {
			if m.GetGauge().GetValue() == 1 {
				low = append(low, m.GetLabel()[0].GetValue())
			}
		}
	}
	return strings.Join(low, ",")
}
