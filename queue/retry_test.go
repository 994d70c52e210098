package queue

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestRetryRace: a lost creation race, a server failure and an unanswered
// request are tried again, up to six times in all; any other error, and a
// cancelled context, end it at once.
func TestRetryRace(t *testing.T) {
	t.Parallel()
	race := fmt.Errorf("create consumer: %w", jetstream.ErrConsumerExists)
	other := errors.New("stream not found")
	overlap := &jetstream.APIError{Code: 400, ErrorCode: 10065, Description: "subjects overlap with an existing stream"}
	serverErr := &jetstream.APIError{Code: 500, ErrorCode: 10049, Description: "error creating store for stream"}
	config := &jetstream.APIError{Code: 400, ErrorCode: 10052, Description: "stream configuration is invalid"}
	unanswered := errors.New("unanswered") // op waits for its attempt's deadline
	tests := []struct {
		name      string
		errs      []error // what op returns on each call; nil after the list
		cancel    bool    // op cancels the caller's context
		deadline  bool    // the caller's deadline comes before the attempt's
		wantCalls int
		wantErr   error
	}{
		{"won at once", nil, false, false, 1, nil},
		{"lost twice, then won", []error{race, race}, false, false, 3, nil},
		{"a 2.9 server's subject overlap is a lost race", []error{overlap}, false, false, 2, nil},
		{"a server failure is tried again", []error{serverErr, serverErr}, false, false, 3, nil},
		{"an unanswered request is sent again", []error{unanswered}, false, false, 2, nil},
		{"another error is not retried", []error{other, nil}, false, false, 1, other},
		{"another API error is not retried", []error{config, nil}, false, false, 1, config},
		{"lost every time", []error{race, race, race, race, race, race, race}, false, false, 6, jetstream.ErrConsumerExists},
		{"cancelled while losing", []error{race, race, race}, true, false, 1, context.Canceled},
		{"unanswered past the caller's deadline", []error{unanswered, unanswered}, false, true, 1, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			attempt := 10 * time.Millisecond
			if tt.deadline {
				ctx, cancel = context.WithTimeout(ctx, 5*time.Millisecond)
				defer cancel()
				attempt = time.Second
			}
			calls := 0
			err := retryRace(ctx, attempt, func(actx context.Context) error {
				calls++
				if tt.cancel {
					cancel()
				}
				if calls > len(tt.errs) {
					return nil
				}
				if err := tt.errs[calls-1]; err != unanswered {
					return err
				}
				<-actx.Done()
				return actx.Err()
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
