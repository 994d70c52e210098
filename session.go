package ordersync

import (
	"context"
	"time"
)

// ConsoleSession is a signed-in browser. The store keeps only hashes: ID
// is the hash of the cookie's value, TokenIdentity the AdminToken's
// Identity, so neither a cookie nor a token can be read back from it. The
// role is not kept: it is the configured token's at every request.
type ConsoleSession struct {
	ID            string
	TokenIdentity string
	TokenName     string
	CreatedAt     time.Time
	ExpiresAt     time.Time
}

// ConsoleSessions keeps the console's sessions, so a restart signs nobody
// out. FindConsoleSession returns ErrNotFound for a session not kept or
// expired at now.
type ConsoleSessions interface {
	CreateConsoleSession(ctx context.Context, s ConsoleSession) error
	FindConsoleSession(ctx context.Context, id string, now time.Time) (ConsoleSession, error)
	DeleteConsoleSession(ctx context.Context, id string) error
}
