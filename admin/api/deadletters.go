package api

import (
	"encoding/json"
	"time"

	"github.com/ordersync/ordersync"
)

// DeadLetterJSON is a dead letter as the API writes it.
type DeadLetterJSON struct {
	ID             int64             `json:"id"`
	MsgID          string            `json:"msgId"`
	Account        string            `json:"account"`
	Reason         string            `json:"reason"`
	Attempts       int               `json:"attempts"`
	LastError      string            `json:"lastError"`
	OrderID        ordersync.ID      `json:"orderId,omitempty"` // a number when all digits, as in the order
	OrderReference string            `json:"orderReference,omitempty"`
	OrderCode      string            `json:"orderCode,omitempty"`
	Body           json.RawMessage   `json:"body,omitempty"`
	BodyText       string            `json:"bodyText,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	CreatedAt      time.Time         `json:"createdAt"`
	ReplayedAt     *time.Time        `json:"replayedAt,omitempty"`
	ReplayCount    int               `json:"replayCount"`
}

// DeadLetterJSONOf converts a dead letter; a body that is not JSON is given
// as text.
func DeadLetterJSONOf(dl *ordersync.DeadLetter) DeadLetterJSON {
	out := DeadLetterJSON{ID: dl.ID, MsgID: dl.MsgID, Account: dl.Account, Reason: string(dl.Reason),
		Attempts: dl.Attempts, LastError: dl.LastError, OrderID: dl.OrderID, OrderReference: dl.OrderReference,
		OrderCode: dl.OrderCode, Headers: dl.Headers, CreatedAt: dl.CreatedAt, ReplayedAt: dl.ReplayedAt,
		ReplayCount: dl.ReplayCount}
	if json.Valid(dl.Body) {
		out.Body = dl.Body
	} else {
		out.BodyText = string(dl.Body)
	}
	return out
}
