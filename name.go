package ordersync

import "regexp"

// validName is what names an account, an endpoint or a namespace: it goes
// into URL paths, environment variables, JetStream consumer names and NATS
// subjects as it is.
var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// NameRule is ValidName's rule in the words of an error message.
const NameRule = "1-64 of A-Z a-z 0-9 _ -"

// ValidName reports whether s may name an account, an endpoint or a
// namespace (NameRule).
func ValidName(s string) bool { return validName.MatchString(s) }
