package delivery

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
)

// WebhookID is the webhook-id of an event at an endpoint: the same for
// every attempt and every replay of the event (eventID, its message id in
// the orders stream), different per endpoint.
func WebhookID(endpointID, eventID string) string {
	sum := sha256.Sum256([]byte(endpointID + "\x00" + eventID))
	return "msg_" + base64.RawURLEncoding.EncodeToString(sum[:18])
}

// statusChange is the "statusChange" of an order event's data; From is nil
// for an order the mirror did not know.
type statusChange struct {
	From *string `json:"from"`
	To   string  `json:"to"`
}

// OrderEventBody is the body of an order event of type eventType published
// at at: the mirrored order as published (a JSON object), under "data", with
// "statusChange": {"from", "to"} added, "to" being the order's
// "orderStatus" and "from" the status before, null when from is empty.
func OrderEventBody(eventType string, at time.Time, order []byte, from string) ([]byte, error) {
	var data map[string]json.RawMessage
	if err := json.Unmarshal(order, &data); err != nil || data == nil {
		return nil, fmt.Errorf("order event body: the order is not a JSON object: %v", err)
	}
	var change statusChange
	_ = json.Unmarshal(data["orderStatus"], &change.To)
	if from != "" {
		change.From = &from
	}
	var err error
	if data["statusChange"], err = json.Marshal(change); err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Type      string                     `json:"type"`
		Timestamp time.Time                  `json:"timestamp"`
		Data      map[string]json.RawMessage `json:"data"`
	}{eventType, at.UTC(), data})
}

// PingBody is the body of the test event sent to an endpoint at at.
func PingBody(endpointID string, at time.Time) ([]byte, error) {
	data, err := json.Marshal(map[string]string{"endpoint": endpointID})
	if err != nil {
		return nil, err
	}
	return json.Marshal(Event{Type: EventPing, Timestamp: at.UTC(), Data: data})
}
