package queue

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// TestRetryRace: a lost creation race is tried again, up to five times in
// all; any other error, and a cancelled context, end it at once.
func TestRetryRace(t *testing.T) {
	t.Parallel()
	race := fmt.Errorf("create consumer: %w", jetstream.ErrConsumerExists)
	other := errors.New("stream not found")
	tests := []struct {
		name      string
		errs      []error // what op returns on each call; nil after the list
		cancel    bool
		wantCalls int
		wantErr   error
	}{
		{"won at once", nil, false, 1, nil},
		{"lost twice, then won", []error{race, race}, false, 3, nil},
		{"another error is not retried", []error{other, nil}, false, 1, other},
		{"lost every time", []error{race, race, race, race, race, race, race}, false, 5, jetstream.ErrConsumerExists},
		{"cancelled while losing", []error{race, race, race}, true, 1, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			calls := 0
			err := retryRace(ctx, func() error {
				calls++
				if tt.cancel {
					cancel()
				}
				if calls <= len(tt.errs) {
					return tt.errs[calls-1]
				}
				return nil
			})
			if calls != tt.wantCalls {
				t.Errorf("op ran %d times, want %d", calls, tt.wantCalls)
			}
			if (tt.wantErr == nil) != (err == nil) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
