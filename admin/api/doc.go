// Package api is the back office's JSON API: its handlers (Handlers, one
// file per resource; orders, the event log, dead letters and the audit
// trail so far, the rest still in admin), which admin routes behind its guard once it knows who asks,
// and its vocabulary: the bodies the API answers and reads (orders, the
// event log, dead letters, endpoints, delivery dead letters, the audit
// trail, RFC 7807 problems), which admin.Client, the CLI and the lab decode
// alike, and the one table from errors to problems.
package api
