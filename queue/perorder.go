package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// CountPerOrder counts a stream's messages on subject by the orderCode of
// their payload, reading them all as a fulfilment consumer would.
func CountPerOrder(ctx context.Context, js jetstream.JetStream, streamName, subject string) (map[string]int, error) {
	stream, err := js.Stream(ctx, streamName)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", streamName, err)
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return nil, fmt.Errorf("consume %s: %w", subject, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("consume %s: %w", subject, err)
	}
	perOrder := map[string]int{}
	for remaining := int(info.NumPending); remaining > 0; {
		batch, err := cons.Fetch(min(remaining, 500), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, fmt.Errorf("fetch %s: %w", subject, err)
		}
		got := 0
		for msg := range batch.Messages() {
			var o struct {
				OrderCode string `json:"orderCode"`
			}
			if err := json.Unmarshal(msg.Data(), &o); err != nil {
				return nil, fmt.Errorf("message on %s: %w", subject, err)
			}
			perOrder[o.OrderCode]++
			got++
		}
		if got == 0 {
			if err := batch.Error(); err != nil {
				return nil, fmt.Errorf("fetch %s: %w", subject, err)
			}
			return nil, fmt.Errorf("fetch %s: %d messages announced, none delivered", subject, remaining)
		}
		remaining -= got
	}
	return perOrder, nil
}
