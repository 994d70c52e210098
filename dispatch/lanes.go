package dispatch

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/delivery"
)

// held is one event an endpoint's runner holds, delivering or waiting in
// its order's lane.
type held struct {
	qe ordersync.QueuedOrderEvent
	// order is its payload, read once; orderErr is why it could not be
	// (order is then empty).
	order    *delivery.Order
	orderErr error
	// at is when it was published: the age the oldest-undelivered gauge
	// shows.
	at time.Time
	// index is its place in lanes.ages.
	index int
}

// lanes holds one endpoint's events in this process, one lane per order:
// the first event of a lane is being delivered, the others wait behind it,
// so an order's events go out in the order published while other orders'
// lanes flow. It counts what it holds and keeps it ordered by age, so the
// runner's loop reads the count and the oldest without a scan.
type lanes struct {
	mu    sync.Mutex
	byKey map[string][]*held
	ages  ageHeap
	// freed is closed, and replaced, when events leave: everyone waiting
	// for room sees it.
	freed chan struct{}
}

func newLanes() *lanes {
	return &lanes{byKey: map[string][]*held{}, freed: make(chan struct{})}
}

// room returns how many more events fit under max, and a channel closed
// when some leave.
func (l *lanes) room(max int) (int, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return max - len(l.ages), l.freed
}

// waitRoom waits until fewer than max events are held, or ctx ends.
func (l *lanes) waitRoom(ctx context.Context, max int) error {
	for {
		n, freed := l.room(max)
		if n > 0 {
			return nil
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// free wakes those waiting for room; l.mu is held.
func (l *lanes) free() {
	close(l.freed)
	l.freed = make(chan struct{})
}

// push puts h at the end of the lane key and reports whether the lane was
// empty: the caller then starts delivering it.
func (l *lanes) push(key string, h *held) (started bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lane, busy := l.byKey[key]
	l.byKey[key] = append(lane, h)
	heap.Push(&l.ages, h)
	return !busy
}

// head returns the first event of the lane key. When the lane is empty it
// reports false and ends the lane: the next push starts it again.
func (l *lanes) head(key string) (*held, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lane := l.byKey[key]
	if len(lane) == 0 {
		delete(l.byKey, key)
		return nil, false
	}
	return lane[0], true
}

// pop removes the first event of the lane key, settled.
func (l *lanes) pop(key string) {
	l.mu.Lock()
	lane := l.byKey[key]
	if len(lane) > 0 {
		heap.Remove(&l.ages, lane[0].index)
		l.byKey[key] = lane[1:]
		l.free()
	}
	l.mu.Unlock()
}

// drop ends the lane key and returns every event in it, unsettled: the
// caller releases them or leaves them to come back from the queue after
// its ack wait, in order.
func (l *lanes) drop(key string) []*held {
	l.mu.Lock()
	defer l.mu.Unlock()
	lane := l.byKey[key]
	for _, h := range lane {
		heap.Remove(&l.ages, h.index)
	}
	if len(lane) > 0 {
		l.free()
	}
	delete(l.byKey, key)
	return lane
}

// len is how many events the lanes hold.
func (l *lanes) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ages)
}

// oldest is when the oldest event held was published; zero when none is.
func (l *lanes) oldest() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ages) == 0 {
		return time.Time{}
	}
	return l.ages[0].at
}

// all returns every event held.
func (l *lanes) all() []*held {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*held(nil), l.ages...)
}

// ageHeap orders held events by publication, oldest first.
type ageHeap []*held

func (h ageHeap) Len() int           { return len(h) }
func (h ageHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h ageHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *ageHeap) Push(x any) {
	e := x.(*held)
	e.index = len(*h)
	*h = append(*h, e)
}

func (h *ageHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.index = -1
	return e
}
