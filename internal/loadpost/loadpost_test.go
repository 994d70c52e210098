package loadpost

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func sign(body []byte) string { return "sig-" + string(body) }

func TestPostSignsAndReportsTheStatus(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+r.Header.Get("X-Sig")+" "+string(body))
		mu.Unlock()
		if string(body) == "refuse" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	p, err := New(Config{URL: srv.URL + "/hook", Connections: 1, SignatureHeader: "X-Sig", Sign: sign})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for body, want := range map[string]int{"a": 200, "refuse": 503} {
		if status, err := p.Post([]byte(body)); err != nil || status != want {
			t.Errorf("Post(%q) = %d, %v; want %d", body, status, err, want)
		}
	}
	want := map[string]bool{
		"POST /hook application/json; charset=utf-8 sig-a a":           true,
		"POST /hook application/json; charset=utf-8 sig-refuse refuse": true,
	}
	for _, g := range got {
		if !want[g] {
			t.Errorf("server got %q, want one of %v", g, want)
		}
	}
}

// TestPostKeepsToItsConnections: 16 goroutines posting through 2
// connections never open a third.
func TestPostKeepsToItsConnections(t *testing.T) {
	var open, most atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The scenario's pacing: each request holds its connection a
		// while, so the 16 posters contend for the 2.
		time.Sleep(time.Millisecond)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			n := open.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	defer srv.Close()
	p, err := New(Config{URL: srv.URL, Connections: 2, SignatureHeader: "X-Sig", Sign: sign})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 10 {
				if status, err := p.Post([]byte("x")); err != nil || status != 200 {
					t.Errorf("Post = %d, %v", status, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m > 2 {
		t.Errorf("%d connections open at once, want at most 2", m)
	}
}

func TestPostErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p, err := New(Config{URL: "http://" + addr + "/hook", Connections: 1, SignatureHeader: "X-Sig", Sign: sign, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Post([]byte("x")); err == nil || !strings.Contains(err.Error(), addr) {
		t.Errorf("Post to a closed port: %v, want an error naming %s", err, addr)
	}
	for _, cfg := range []Config{
		{Connections: 1, SignatureHeader: "X", Sign: sign},
		{URL: "http://x", SignatureHeader: "X", Sign: sign},
		{URL: "http://x", Connections: 1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}
