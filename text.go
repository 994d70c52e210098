package ordersync

import (
	"strings"
	"unicode/utf8"
)

// Clip bounds text that came from outside (an upstream answer, a client's
// header, an error's message) before it reaches an answer, a log line or a
// row: invalid UTF-8 becomes U+FFFD, and text longer than n bytes is cut
// at a rune boundary at or below n and marked with "…". The result is at
// most n bytes plus the mark.
func Clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
