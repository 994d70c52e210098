package console

import (
	"sync"
	"time"
)

// signInLimiter slows down repeated wrong tokens from one client: after
// free failures each further one makes the client wait, twice as long
// each time up to maxWait, before it may try again, the right token
// included. It tracks at most maxClients clients: when that many have
// failed recently, every other client shares one record, so a hostile
// client with many addresses costs bounded memory and cannot wipe the
// records of the others.
type signInLimiter struct {
	free       int
	baseWait   time.Duration
	maxWait    time.Duration
	forget     time.Duration // a record unused this long starts over
	maxClients int
	mu         sync.Mutex
	clients    map[string]*failures
	overflow   failures
}

type failures struct {
	n     int
	last  time.Time
	until time.Time
}

func newSignInLimiter() *signInLimiter {
	return &signInLimiter{free: 5, baseWait: time.Second, maxWait: 5 * time.Minute, forget: time.Hour,
		maxClients: 4096, clients: map[string]*failures{}}
}

// wait is how long client must wait before its next attempt counts.
func (l *signInLimiter) wait(client string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.lookup(client, now, false)
	if f == nil || !now.Before(f.until) {
		return 0
	}
	return f.until.Sub(now)
}

// fail counts a wrong token from client and returns the wait it now owes.
func (l *signInLimiter) fail(client string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.lookup(client, now, true)
	if now.Sub(f.last) > l.forget {
		f.n = 0
	}
	f.n++
	f.last = now
	if f.n <= l.free {
		return 0
	}
	d := l.baseWait
	for i := l.free + 1; i < f.n && d < l.maxWait; i++ {
		d *= 2
	}
	d = min(d, l.maxWait)
	f.until = now.Add(d)
	return d
}

// succeed forgets client's failures: the right token, in time.
func (l *signInLimiter) succeed(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.clients, client)
}

// lookup is client's record; with create, a new one when there is room
// (after forgetting the records that have served their time), or the
// shared one.
func (l *signInLimiter) lookup(client string, now time.Time, create bool) *failures {
	if f, ok := l.clients[client]; ok {
		return f
	}
	if len(l.clients) < l.maxClients {
		if !create {
			return nil
		}
		f := &failures{}
		l.clients[client] = f
		return f
	}
	for c, f := range l.clients {
		if now.Sub(f.last) > l.forget && !now.Before(f.until) {
			delete(l.clients, c)
		}
	}
	if len(l.clients) < l.maxClients {
		return l.lookup(client, now, create)
	}
	return &l.overflow
}

// tracked is how many clients have a record of their own.
func (l *signInLimiter) tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}
