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
	post := func() int {
		t.Helper()
		res, err := http.Post(p.URL(), "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}

	p.probed(true, time.Now().Add(-time.Millisecond))
	if got := post(); got != http.StatusServiceUnavailable {
		t.Errorf("with an expired verdict the gate answered %d, want 503", got)
	}
	if n := p.refusedWhileReady.Load(); n != 0 {
		t.Errorf("%d refusals counted while ready on an expired verdict", n)
	}

	p.probed(true, time.Now().Add(time.Hour))
	if got := post(); got != http.StatusBadGateway {
		t.Errorf("with a live verdict the proxy answered %d, want 502 from the refused dial", got)
	}
	if n := p.refusedWhileReady.Load(); n != 1 {
		t.Errorf("%d refusals counted while ready on a live verdict, want 1", n)
	}
}

// TestGateVerdictIsOneWord: a probe that says not ready never lends its
// later bound to the ready before it. With the answer and its bound in two
// words, a reader between the two stores saw an expired ready revived until
// the not-ready probe's send time plus the drain: the gate forwarded
// webhooks to a pipeline past its drain, whose closed connections then
// counted as refused while ready.
func TestGateVerdictIsOneWord(t *testing.T) {
	p := &recordingProxy{}
	expired := time.Now().Add(-time.Hour)
	p.probed(true, expired)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			p.probed(false, time.Now().Add(time.Hour))
			p.probed(true, expired)
		}
	}()
	seen := 0
	for range 2_000_000 {
		if p.readyNow() {
			seen++
		}
	}
	close(stop)
	<-done
	if seen > 0 {
		t.Errorf("the gate said ready %d times, though every probe said not ready or ready until an hour ago", seen)
	}
}
