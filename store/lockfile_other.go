//go:build !unix

package store

import "context"

// lockFile is a no-op where flock does not exist: concurrent first starts
// of several processes on one SQLite file are then not serialised.
func lockFile(context.Context, string) (func(), error) { return func() {}, nil }
