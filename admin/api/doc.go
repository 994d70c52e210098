// Package api is the back office's JSON API: its handlers (Handlers, one
// file per resource: orders, the event log, dead letters, the audit
// trail, endpoints, delivery dead letters, daily totals, exports), which
// admin routes behind its guard once it knows who asks and serves through
// an Office; the actions the console shares with them; the stores a
// request may choose and the order filter as a query writes it, which the
// CLI calls too; and its vocabulary: the bodies the API answers and reads,
// which admin.Client, the CLI and the lab decode alike, and the one table
// from errors to problems, which the console answers by as well.
package api
