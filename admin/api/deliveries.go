package api

import (
	"time"

	"github.com/ordersync/ordersync"
)

// DeliveryDeadLetterJSON is a delivery dead letter as the API shows it.
type DeliveryDeadLetterJSON struct {
	ID          int64      `json:"id"`
	EndpointID  string     `json:"endpointId"`
	Event       string     `json:"event"`
	WebhookID   string     `json:"webhookId"`
	Account     string     `json:"account"`
	OrderCode   string     `json:"orderCode"`
	Attempts    int        `json:"attempts"`
	LastStatus  int        `json:"lastStatus"`
	LastBody    string     `json:"lastBody,omitempty"`
	LastError   string     `json:"lastError,omitempty"`
	CreatedAt   time.Time  `json:"createdAt"`
	ReplayedAt  *time.Time `json:"replayedAt,omitempty"`
	ReplayCount int        `json:"replayCount"`
}

func DeliveryDeadLetterJSONOf(dl *ordersync.DeliveryDeadLetter) DeliveryDeadLetterJSON {
	return DeliveryDeadLetterJSON{ID: dl.ID, EndpointID: dl.EndpointID, Event: string(dl.Event), WebhookID: dl.WebhookID,
		Account: dl.Account, OrderCode: dl.OrderCode, Attempts: dl.Attempts, LastStatus: dl.LastStatus, LastBody: dl.LastBody,
		LastError: dl.LastError, CreatedAt: dl.CreatedAt, ReplayedAt: dl.ReplayedAt, ReplayCount: dl.ReplayCount}
}

// FailedReplay is what a replay of failed deliveries did. Each was sent
// once, now, with its webhook-id and body: Delivered are those the
// endpoint answered 2xx (no longer failed), FailedAgain those it did not
// (still failed, listed with their new answer), Skipped those named that
// were no longer failed (delivered meanwhile, or another endpoint's), which
// were not sent. Remaining counts the endpoint's failed deliveries after.
type FailedReplay struct {
	Sent        int     `json:"sent"`
	Delivered   []int64 `json:"delivered"`
	FailedAgain []int64 `json:"failedAgain"`
	Skipped     []int64 `json:"skipped"`
	Remaining   int     `json:"remaining"`
}

// ReplayFailedJSON is the body of POST
// /v1/endpoints/{id}/failed-deliveries/replay: the dead letter ids, or all.
type ReplayFailedJSON struct {
	IDs []int64 `json:"ids"`
	All bool    `json:"all"`
}
