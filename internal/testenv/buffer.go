package testenv

import (
	"bytes"
	"sync"
)

// Buffer is a log destination safe for concurrent writers: a test hands it
// to a server or a program whose goroutines log, and reads what they wrote.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
