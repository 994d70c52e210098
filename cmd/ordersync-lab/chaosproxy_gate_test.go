package main

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestGateVerdictExpires: a "ready" older than the drain no longer opens
// the gate, so a webhook that then meets the closed port of a drained
// pipeline is held back, not counted as refused while ready; within the
// drain a refusal still counts.
func TestGateVerdictExpires(t *testing.T) {
	p, err := startRecordingProxy()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/webhooks/paymentlink"
	ln.Close() // the drained pipeline's webhook port
	p.SetTarget(closed)
	p.gated.Store(true)
	p.ready.Store(true)
	post := func() int {
		t.Helper()
		res, err := http.Post(p.URL(), "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}

	p.readyUntil.Store(time.Now().Add(-time.Millisecond).UnixNano())
	if got := post(); got != http.StatusServiceUnavailable {
		t.Errorf("with an expired verdict the gate answered %d, want 503", got)
	}
	if n := p.refusedWhileReady.Load(); n != 0 {
		t.Errorf("%d refusals counted while ready on an expired verdict", n)
	}

	p.readyUntil.Store(time.Now().Add(time.Hour).UnixNano())
	if got := post(); got != http.StatusBadGateway {
		t.Errorf("with a live verdict the proxy answered %d, want 502 from the refused dial", got)
	}
	if n := p.refusedWhileReady.Load(); n != 1 {
		t.Errorf("%d refusals counted while ready on a live verdict, want 1", n)
	}
}
