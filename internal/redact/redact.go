// Package redact hides the credentials a database or NATS URL can carry,
// for logs, messages and the settings page.
package redact

import (
	"regexp"
	"strings"
)

// Mask stands in for each credential that URL hides.
const Mask = "xxxxx"

// secretParam matches a key=value pair whose key names a credential, in a
// URL's query (password=, sslpassword=, sslkey=, SQLite's _auth_pass=) or
// in a libpq key=value DSN (password='…'), with the value quoted or not.
var secretParam = regexp.MustCompile(`(?i)((?:^|[\s?&;])[\w.-]*(?:pass|pwd|secret|token|key|credential)[\w.-]*\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s&#]*)`)

// URL hides every credential a database or NATS URL (or a list of
// NATS URLs, or a libpq key=value DSN) can carry, for logs and messages:
// a userinfo password, a NATS userinfo token (a user alone is a token
// there; a PostgreSQL user alone is kept), and the values of parameters
// named like a password, key, secret or token.
func URL(s string) string {
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, "://")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		scheme := strings.ToLower(rest[:i])
		if j := strings.LastIndexAny(scheme, " ,;\t\n"); j >= 0 {
			scheme = scheme[j+1:]
		}
		b.WriteString(rest[:i+3])
		rest = rest[i+3:]
		// The authority ends where Go's and libpq's URL parsers end it;
		// the last '@' in it ends the userinfo. A comma starts the next
		// URL of a NATS server list.
		end := strings.IndexAny(rest, "/?#, \t\n")
		if end < 0 {
			end = len(rest)
		}
		if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
			user, _, hasPassword := strings.Cut(rest[:at], ":")
			switch {
			case hasPassword:
				b.WriteString(user + ":" + Mask)
			case scheme == "postgres" || scheme == "postgresql":
				b.WriteString(user)
			default:
				b.WriteString(Mask)
			}
			rest = rest[at:]
		}
	}
	return secretParam.ReplaceAllString(b.String(), "${1}"+Mask)
}
