package dispatch_test

import (
	"testing"
	"time"

	"github.com/ordersync/ordersync/dispatch"
)

// TestConfigValidation: a missing dependency or a bad setting is refused
// with an error naming the field.
func TestConfigValidation(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		want string
		edit func(*dispatch.Config)
	}{
		{"dispatch: Config.Endpoints is required", func(c *dispatch.Config) { c.Endpoints = nil }},
		{"dispatch: Config.DeadLetters is required", func(c *dispatch.Config) { c.DeadLetters = nil }},
		{"dispatch: Config.Log is required", func(c *dispatch.Config) { c.Log = nil }},
		{"dispatch: Config.Stream is required", func(c *dispatch.Config) { c.Stream = nil }},
		{"dispatch: Config.AckWait 2s must be at least 3s", func(c *dispatch.Config) { c.AckWait = 2 * time.Second }},
	} {
		cfg := dispatch.Config{Endpoints: e.db, DeadLetters: e.db, Log: e.db, Stream: e.q}
		tt.edit(&cfg)
		if _, err := dispatch.New(cfg); err == nil || err.Error() != tt.want {
			t.Errorf("New: %v, want %q", err, tt.want)
		}
	}
	// With every required field and nothing else, the defaults fill in the
	// rest and it builds.
	if _, err := dispatch.New(dispatch.Config{Endpoints: e.db, DeadLetters: e.db, Log: e.db, Stream: e.q}); err != nil {
		t.Errorf("New with the required fields only: %v", err)
	}
}
