package webhook

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// freeBodyBytes is how much of a body a request may hold without drawing
// on the shared budget: every real webhook fits, so a flood of large
// bodies never turns them away.
const freeBodyBytes = 8 << 10

// errBusy: the budget of body bytes in flight is spent.
var errBusy = errors.New("webhook bodies in flight over their budget")

// bodyBudget counts the bytes held by request bodies. Beyond each
// request's first freeBodyBytes, they are taken from limit.
type bodyBudget struct {
	limit int64
	used  atomic.Int64 // bytes taken beyond the free ones
	held  prometheus.Gauge
}

// heldBody is what one request holds: its buffer's capacity, and how much
// of it was taken from the budget.
type heldBody struct{ size, taken int64 }

// grow accounts a buffer growing from h.size to size bytes; false when the
// budget cannot give the bytes beyond the free ones.
func (b *bodyBudget) grow(h *heldBody, size int64) bool {
	need := max(0, size-freeBodyBytes) - h.taken
	for need > 0 {
		used := b.used.Load()
		if used+need > b.limit {
			return false
		}
		if b.used.CompareAndSwap(used, used+need) {
			h.taken += need
			break
		}
	}
	b.held.Add(float64(size - h.size))
	h.size = size
	return true
}

func (b *bodyBudget) release(h heldBody) {
	b.used.Add(-h.taken)
	b.held.Sub(float64(h.size))
}

// readBody reads at most MaxBodyBytes into a buffer that grows as bytes
// arrive (an announced Content-Length is not allocated up front), within
// the budget of body bytes in flight. On *http.MaxBytesError the bytes read
// so far are returned with it; errBusy when the budget is spent. The
// caller releases what it holds.
func (rc *Receiver) readBody(w http.ResponseWriter, r *http.Request) ([]byte, heldBody, error) {
	var h heldBody
	limit := rc.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, h, &http.MaxBytesError{Limit: limit}
	}
	// Room for one byte past the limit, so that MaxBytesReader can tell a
	// body of exactly the limit from a longer one; a body whose length is
	// announced needs no more than that.
	ceiling := limit + 1
	if r.ContentLength >= 0 {
		ceiling = r.ContentLength
	}
	size := min(ceiling, 512)
	if !rc.bodies.grow(&h, size) {
		return nil, h, errBusy
	}
	buf := make([]byte, 0, size)
	src := http.MaxBytesReader(w, r.Body, limit)
	for {
		if int64(len(buf)) == ceiling && r.ContentLength >= 0 {
			return buf, h, nil // the server ends the body at Content-Length
		}
		if len(buf) == cap(buf) {
			next := min(2*int64(cap(buf)), ceiling)
			if !rc.bodies.grow(&h, next) {
				return buf, h, errBusy
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			buf = grown
		}
		n, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF:
			return buf, h, nil
		case err != nil:
			return buf, h, fmt.Errorf("read webhook body: %w", err)
		}
	}
}
