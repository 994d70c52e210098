package ordersync

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// NameTokens are the words of a name as search matches them: lower case,
// without accents (NFD, combining marks dropped), split at anything that is
// not a letter or a digit, each once, in order. "José  Peña-Ruiz" gives
// jose, pena, ruiz.
func NameTokens(name string) []string {
	var (
		out  []string
		word strings.Builder
	)
	flush := func() {
		if word.Len() == 0 {
			return
		}
		w := word.String()
		word.Reset()
		for _, seen := range out {
			if seen == w {
				return
			}
		}
		out = append(out, w)
	}
	for _, r := range norm.NFD.String(name) {
		switch {
		case unicode.Is(unicode.Mn, r):
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			word.WriteRune(unicode.ToLower(r))
		default:
			flush()
		}
	}
	flush()
	return out
}

// IdentifierKey is an email or an order reference as search matches it:
// in lower case and without surrounding spaces, so that case never
// decides whether a caller's words find an order.
func IdentifierKey(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// SearchAmount is q read as an order total a search looks for, when it is
// a plain decimal (digits, at most one point with digits after it:
// 12.50, 12.5, 1000); false otherwise.
func SearchAmount(q string) (Amount, bool) {
	whole, frac, point := strings.Cut(q, ".")
	digits := func(s string) bool {
		return s != "" && strings.Trim(s, "0123456789") == ""
	}
	if !digits(whole) || (point && !digits(frac)) {
		return Amount{}, false
	}
	a, err := ParseAmount(q)
	return a, err == nil
}
