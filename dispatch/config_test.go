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
		edit func(*dispatch.DispatcherConfig)
	}{
		{"dispatch: DispatcherConfig.Endpoints is required", func(c *dispatch.DispatcherConfig) { c.Endpoints = nil }},
		{"dispatch: DispatcherConfig.DeadLetters is required", func(c *dispatch.DispatcherConfig) { c.DeadLetters = nil }},
		{"dispatch: DispatcherConfig.Log is required", func(c *dispatch.DispatcherConfig) { c.Log = nil }},
		{"dispatch: DispatcherConfig.Stream is required", func(c *dispatch.DispatcherConfig) { c.Stream = nil }},
		{"dispatch: DispatcherConfig.AckWait 2s must be at least 3s", func(c *dispatch.DispatcherConfig) { c.AckWait = 2 * time.Second }},
	} {
		cfg := dispatch.DispatcherConfig{Endpoints: e.db, DeadLetters: e.db, Log: e.db, Stream: e.q}
		tt.edit(&cfg)
		if _, err := dispatch.NewDispatcher(cfg); err == nil || err.Error() != tt.want {
			t.Errorf("NewDispatcher: %v, want %q", err, tt.want)
		}
	}
	// With every required field and nothing else, the defaults fill in the
	// rest and it builds.
	if _, err := dispatch.NewDispatcher(dispatch.DispatcherConfig{Endpoints: e.db, DeadLetters: e.db, Log: e.db, Stream: e.q}); err != nil {
		t.Errorf("NewDispatcher with the required fields only: %v", err)
	}
}
