// Package api is the back-office JSON API's vocabulary: the bodies its
// handlers answer and read (orders, the event log, dead letters,
// endpoints, delivery dead letters, the audit trail, RFC 7807 problems),
// which admin.Client, the CLI and the lab decode alike. The admin package
// serves them.
package api
