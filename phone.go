package ordersync

import (
	"slices"
	"strings"
)

// callingPlan is how a country's phone numbers are written: its calling
// code, the trunk prefix dialled before a national number inside the
// country (dropped in the international form), and the lengths of its
// national significant numbers.
type callingPlan struct {
	code     string
	trunk    string
	min, max int
}

// callingPlans are the countries whose numbers PhoneKey reads without an
// international prefix: Central and South America, North America, the
// Caribbean's largest and the European countries stores sell to most. A
// number of another country is still found when written with its code.
var callingPlans = map[string]callingPlan{
	"SV": {"503", "", 8, 8}, "GT": {"502", "", 8, 8}, "HN": {"504", "", 8, 8}, "NI": {"505", "", 8, 8},
	"CR": {"506", "", 8, 8}, "PA": {"507", "", 7, 8}, "BZ": {"501", "", 7, 7},
	"MX": {"52", "", 10, 10}, "US": {"1", "1", 10, 10}, "CA": {"1", "1", 10, 10}, "DO": {"1", "1", 10, 10},
	"PR": {"1", "1", 10, 10}, "CU": {"53", "0", 8, 8},
	"CO": {"57", "", 10, 10}, "VE": {"58", "0", 10, 10}, "EC": {"593", "0", 8, 9}, "PE": {"51", "0", 8, 9},
	"BO": {"591", "0", 8, 8}, "CL": {"56", "", 9, 9}, "AR": {"54", "0", 10, 11}, "UY": {"598", "0", 8, 8},
	"PY": {"595", "0", 9, 9}, "BR": {"55", "0", 10, 11},
	"ES": {"34", "", 9, 9}, "PT": {"351", "", 9, 9}, "FR": {"33", "0", 9, 9}, "DE": {"49", "0", 6, 13},
	"IT": {"39", "", 6, 11}, "GB": {"44", "0", 9, 10}, "NL": {"31", "0", 9, 9}, "BE": {"32", "0", 8, 9},
	"CH": {"41", "0", 9, 9},
}

// PhoneCountries are the countries (ISO 3166-1 alpha-2) whose national
// numbers PhoneKey reads, sorted.
func PhoneCountries() []string {
	out := make([]string, 0, len(callingPlans))
	for c := range callingPlans {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// Phone numbers hold at least minPhoneDigits digits as written and at most
// maxPhoneDigits in their international form (E.164's limit): fewer is an
// extension, an amount or an id, not a number to look up.
const (
	minPhoneDigits = 6
	maxPhoneDigits = 15
)

// PhoneKey is a phone number as the mirror stores and search matches it:
// the digits of its international form, calling code first, without "+"
// ("+503 7365-7811" gives 50373657811). A number without an international
// prefix ("+" or "00") is read as written in country (the store's ISO
// 3166-1 alpha-2 code), whose trunk prefix is dropped and calling code
// added; one that already begins with country's calling code and is too
// long to be national keeps it. Spaces, dashes, dots, slashes and
// parentheses are ignored, and so is a trunk prefix written "(0)" after
// the calling code. "" when phone is not a number: another
// character, or too few or too many digits.
func PhoneKey(phone, country string) string {
	keys := phoneReadings(phone, country)
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

// PhoneSearchKeys are the keys (PhoneKey) a searched number may be stored
// under, when the stores searched are in countries: one for a number with
// an international prefix; for one without, its reading in each country,
// both readings where it could be national or begin with the calling code,
// and the digits alone (a number stored in a country PhoneKey does not
// know). Empty when q is not a number.
func PhoneSearchKeys(q string, countries []string) []string {
	var keys []string
	for _, c := range countries {
		for _, k := range phoneReadings(q, c) {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	for _, k := range phoneReadings(q, "") {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// phoneReadings are the international forms phone may mean in country,
// the likelier first: a national number when its length is one of the
// country's, else one that begins with the calling code.
func phoneReadings(phone, country string) []string {
	digits, international, ok := phoneDigits(phone)
	if !ok || len(digits) < minPhoneDigits {
		return nil
	}
	valid := func(k string) bool { return len(k) <= maxPhoneDigits }
	if international {
		if !valid(digits) {
			return nil
		}
		return []string{digits}
	}
	plan, known := callingPlans[strings.ToUpper(strings.TrimSpace(country))]
	if !known {
		if !valid(digits) {
			return nil
		}
		return []string{digits}
	}
	fits := func(n string) bool { return len(n) >= plan.min && len(n) <= plan.max }
	national := digits
	if plan.trunk != "" && strings.HasPrefix(national, plan.trunk) && fits(national[len(plan.trunk):]) {
		national = national[len(plan.trunk):]
	}
	var out []string
	if fits(national) && valid(plan.code+national) {
		out = append(out, plan.code+national)
	}
	if rest, ok := strings.CutPrefix(digits, plan.code); ok && fits(rest) && valid(digits) && !slices.Contains(out, digits) {
		out = append(out, digits)
	}
	if len(out) == 0 && valid(plan.code+national) {
		// A length the plan does not name: read as national all the same,
		// so the store's own numbers stay in its country.
		out = append(out, plan.code+national)
	}
	return out
}

// phoneDigits are the digits of phone without its separators, whether it
// began with an international prefix ("+" or "00", dropped), and false when
// it holds anything but digits and separators.
func phoneDigits(phone string) (string, bool, bool) {
	s := strings.TrimSpace(phone)
	international := false
	if rest, ok := strings.CutPrefix(s, "+"); ok {
		// "+44 (0)20 …": the trunk prefix in parentheses is not dialled
		// from abroad.
		s, international = strings.Replace(rest, "(0)", "", 1), true
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == ' ' || r == '-' || r == '.' || r == '(' || r == ')' || r == '/' || r == '\u00a0':
		default:
			return "", false, false
		}
	}
	digits := b.String()
	if !international {
		if rest, ok := strings.CutPrefix(digits, "00"); ok {
			digits, international = rest, true
		}
	}
	return digits, international, true
}
