package api

import (
	"time"
)

// AuditJSON is one record of the audit trail as the API writes it.
type AuditJSON struct {
	ID      int64     `json:"id"`
	At      time.Time `json:"at"`
	Actor   string    `json:"actor"`
	Role    string    `json:"role,omitempty"`
	Via     string    `json:"via"`
	Action  string    `json:"action"`
	Object  string    `json:"object,omitempty"`
	Outcome string    `json:"outcome"`
}

// AuditList is the body of GET /v1/audit. NextCursor, when not empty, is
// the cursor of the next page.
type AuditList struct {
	Records    []AuditJSON `json:"records"`
	Count      int         `json:"count"`
	NextCursor string      `json:"nextCursor,omitempty"`
}
