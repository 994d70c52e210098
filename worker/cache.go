package worker

import (
	"sync"

	"github.com/ordersync/ordersync"
)

// codeCache remembers which order code an order id belongs to, so events
// for orders seen before skip the mirror lookup. Ids never change owner, so
// an entry never goes stale; the cache only has to stay bounded. It keeps
// two generations: when the current one is full it becomes the previous
// one and the oldest is dropped, an LRU approximation with no per-hit
// bookkeeping.
type codeCache struct {
	mu       sync.Mutex
	capacity int
	cur      map[codeKey]string
	prev     map[codeKey]string
}

type codeKey struct {
	account string
	id      ordersync.ID
}

func newCodeCache(capacity int) *codeCache {
	return &codeCache{capacity: capacity, cur: make(map[codeKey]string)}
}

func (c *codeCache) get(account string, id ordersync.ID) (string, bool) {
	if id == "" {
		return "", false
	}
	k := codeKey{account, id}
	c.mu.Lock()
	defer c.mu.Unlock()
	if code, ok := c.cur[k]; ok {
		return code, true
	}
	code, ok := c.prev[k]
	if ok {
		c.putLocked(k, code) // keep what is still in use
	}
	return code, ok
}

func (c *codeCache) put(account string, id ordersync.ID, code string) {
	if id == "" || code == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(codeKey{account, id}, code)
}

func (c *codeCache) putLocked(k codeKey, code string) {
	if len(c.cur) >= c.capacity {
		c.prev, c.cur = c.cur, make(map[codeKey]string, c.capacity)
	}
	c.cur[k] = code
}
