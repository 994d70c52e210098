package dispatch

import (
	"context"
	"fmt"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/delivery"
)

// once sends one attempt on request (a ping, a dead letter replayed),
// outside the lanes and the retry schedule, and reports its answer.
func (d *Dispatcher) once(ctx context.Context, ep *ordersync.Endpoint, id string, body []byte) ordersync.DeliveryReport {
	res := d.attempt(ctx, d.cfg.Client, ep, id, body, "")
	d.metrics.attempts.WithLabelValues(ep.ID, res.label).Inc()
	rep := ordersync.DeliveryReport{WebhookID: id, Delivered: res.verdict == delivered, Status: res.status, Answer: res.answer}
	if res.err != nil {
		rep.Error = res.err.Error()
	}
	return rep
}

// Ping sends a signed "ping" event to an endpoint once, disabled or not,
// and reports the answer.
func (d *Dispatcher) Ping(ctx context.Context, endpointID string) (ordersync.DeliveryReport, error) {
	ep, err := d.cfg.Endpoints.FindEndpoint(ctx, endpointID)
	if err != nil {
		return ordersync.DeliveryReport{}, err
	}
	now := time.Now()
	body, err := delivery.PingBody(ep.ID, now)
	if err != nil {
		return ordersync.DeliveryReport{}, err
	}
	return d.once(ctx, ep, delivery.WebhookID(ep.ID, "ping:"+now.Format(time.RFC3339Nano)), body), nil
}

// ReplayDeadLetter sends a delivery dead letter again, once, with its
// webhook-id and body; a 2xx marks it replayed, any other answer becomes
// the letter's last, its attempts counting this one.
func (d *Dispatcher) ReplayDeadLetter(ctx context.Context, id int64) (ordersync.DeliveryReport, error) {
	dl, err := d.cfg.DeadLetters.FindDeliveryDeadLetter(ctx, id)
	if err != nil {
		return ordersync.DeliveryReport{}, err
	}
	ep, err := d.cfg.Endpoints.FindEndpoint(ctx, dl.EndpointID)
	if err != nil {
		return ordersync.DeliveryReport{}, err
	}
	if ep.Disabled {
		return ordersync.DeliveryReport{}, fmt.Errorf("replay delivery dead letter %d: endpoint %s: %w", id, ep.ID, ordersync.ErrEndpointDisabled)
	}
	rep := d.once(ctx, ep, dl.WebhookID, dl.Body)
	if !rep.Delivered {
		// Still failed: a person reading the letter sees this answer.
		dl.Attempts++
		dl.LastStatus, dl.LastBody, dl.LastError = rep.Status, rep.Answer, rep.Error
		if _, err := d.cfg.DeadLetters.AddDeliveryDeadLetter(ctx, *dl); err != nil {
			return rep, err
		}
		// And the order's event log shows this attempt's answer.
		answer := rep.Error
		if rep.Answer != "" {
			answer = rep.Answer
		}
		rec := ordersync.DeliveryRecord{WebhookID: dl.WebhookID, EndpointID: ep.ID, Event: dl.Event, Account: dl.Account,
			OrderCode: dl.OrderCode, Outcome: ordersync.DeliveryDeadLettered, Attempts: dl.Attempts, Status: rep.Status,
			Detail: fmt.Sprintf("dead letter %d: replayed, failed again: %s", id, answer)}
		if err := d.cfg.Log.RecordDeliveries(ctx, []ordersync.DeliveryRecord{rec}); err != nil {
			return rep, err
		}
	}
	if rep.Delivered {
		if err := d.cfg.DeadLetters.MarkDeliveryDeadLetterReplayed(ctx, id, time.Now()); err != nil {
			return rep, err
		}
		d.metrics.events.WithLabelValues(ep.ID, "delivered").Inc()
		rec := ordersync.DeliveryRecord{WebhookID: dl.WebhookID, EndpointID: ep.ID, Event: dl.Event, Account: dl.Account,
			OrderCode: dl.OrderCode, Outcome: ordersync.DeliveryDelivered, Attempts: 1, Status: rep.Status,
			Detail: fmt.Sprintf("replay of delivery dead letter %d", id)}
		if err := d.cfg.Log.RecordDeliveries(ctx, []ordersync.DeliveryRecord{rec}); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// Replay queues every stored event the endpoint subscribes to, published
// at or after since, for delivery again under the same rules (and the
// same webhook-ids) as the first time, behind the events of the same order
// already in flight. It returns how many it queued.
func (d *Dispatcher) Replay(ctx context.Context, endpointID string, since time.Time) (int, error) {
	ep, err := d.cfg.Endpoints.FindEndpoint(ctx, endpointID)
	if err != nil {
		return 0, err
	}
	if ep.Disabled {
		return 0, fmt.Errorf("replay to endpoint %s: %w", ep.ID, ordersync.ErrEndpointDisabled)
	}
	d.Notify()
	r, err := d.runnerOf(ctx, ep.ID)
	if err != nil {
		return 0, fmt.Errorf("replay to endpoint %s: %w", ep.ID, err)
	}
	n := 0
	err = d.cfg.Stream.OrderEventsSince(ctx, since, ep.Events, func(ev ordersync.OrderEvent) error {
		// Like the events read from the consumer, replayed ones wait in
		// the stream while the runner holds as many as it may.
		if err := r.lanes.waitRoom(ctx, d.cfg.MaxHeld); err != nil {
			return err
		}
		r.enqueue(replayed{ev})
		n++
		return nil
	})
	return n, err
}

// runnerOf waits for the endpoint's runner.
func (d *Dispatcher) runnerOf(ctx context.Context, id string) (*runner, error) {
	for {
		d.mu.Lock()
		r, started := d.runners[id], d.started
		d.mu.Unlock()
		if r != nil {
			return r, nil
		}
		select {
		case <-started:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// replayed is an event read again from the stream: nothing to settle.
type replayed struct{ ev ordersync.OrderEvent }

func (r replayed) Event() ordersync.OrderEvent { return r.ev }
func (replayed) Ack(context.Context) error     { return nil }
func (replayed) Extend() error                 { return nil }
func (replayed) Release() error                { return nil }
