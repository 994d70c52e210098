package queue

import (
	"bytes"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slowLink relays TCP connections to a server and holds what the server
// sends for delay (which may change at any time) before passing it on, in
// order: a client on a busy machine that reads its socket late.
type slowLink struct {
	ln     net.Listener
	server string
	delay  atomic.Int64 // nanoseconds
	// closed ends the relays, bytes still held included.
	closed chan struct{}
	wg     sync.WaitGroup
}

func startSlowLink(t testing.TB, server string) *slowLink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &slowLink{ln: ln, server: server, closed: make(chan struct{})}
	l.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.wg.Go(func() { l.relay(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		close(l.closed)
		l.wg.Wait()
	})
	return l
}

func (l *slowLink) addr() string { return l.ln.Addr().String() }

func (l *slowLink) setDelay(d time.Duration) { l.delay.Store(int64(d)) }

func (l *slowLink) relay(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", l.server)
	if err != nil {
		return
	}
	defer server.Close()
	go func() {
		_, _ = io.Copy(server, client)
		server.Close()
	}()
	type chunk struct {
		due time.Time
		b   []byte
	}
	chunks := make(chan chunk, 1024)
	l.wg.Go(func() {
		for c := range chunks {
			select {
			case <-time.After(time.Until(c.due)):
			case <-l.closed:
				return
			}
			if _, err := client.Write(c.b); err != nil {
				return
			}
		}
	})
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			select {
			case chunks <- chunk{due: time.Now().Add(time.Duration(l.delay.Load())), b: bytes.Clone(buf[:n])}:
			case <-l.closed:
				close(chunks)
				return
			}
		}
		if err != nil {
			close(chunks)
			return
		}
	}
}
