package ordersync

import (
	"bytes"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cockroachdb/apd/v3"
)

// Amount is an exact decimal amount of money. It keeps the digits it was
// given ("6.50" stays "6.50"), decodes from a JSON number or string, and is
// encoded as a JSON number. The zero value is 0.
//
// Floating point never touches an Amount: upstream documents, SQL columns and
// arithmetic all go through decimal text and apd.
type Amount struct{ d apd.Decimal }

// moneyContext is wide enough that sums and products of amounts within the
// limits below, and quantities that fit an int64, are exact.
var moneyContext = apd.BaseContext.WithPrecision(80)

// The largest amounts ParseAmount accepts. No price needs more, and the
// bound keeps a hostile document from turning "1e99999" into a hundred
// kilobytes of digits or an arithmetic overflow.
const (
	MaxAmountIntegerDigits  = 24
	MaxAmountFractionDigits = 18
)

// ParseAmount parses a plain decimal such as "12", "6.50" or "-0.01". It
// rejects NaN, infinities and amounts beyond MaxAmountIntegerDigits digits
// before the point or MaxAmountFractionDigits after it.
func ParseAmount(s string) (Amount, error) {
	var a Amount
	s = strings.TrimSpace(s)
	if s == "" {
		return a, fmt.Errorf("parse amount: empty")
	}
	// Parsed in place: no intermediate Decimal to allocate and copy.
	d := &a.d
	if parsePlainAmount(s, d) {
		return a, nil
	}
	if _, _, err := d.SetString(s); err != nil {
		return Amount{}, fmt.Errorf("parse amount %.40q: not a decimal number", s)
	}
	if d.Form != apd.Finite {
		return Amount{}, fmt.Errorf("parse amount %.40q: not a finite number", s)
	}
	if -int64(d.Exponent) > MaxAmountFractionDigits {
		return Amount{}, fmt.Errorf("parse amount %.40q: more than %d decimal places", s, MaxAmountFractionDigits)
	}
	if int64(d.Exponent) > MaxAmountIntegerDigits || (!d.IsZero() && d.NumDigits()+int64(d.Exponent) > MaxAmountIntegerDigits) {
		return Amount{}, fmt.Errorf("parse amount %.40q: more than %d digits before the point", s, MaxAmountIntegerDigits)
	}
	return a, nil
}

// parsePlainAmount sets d to s when s is an optional "-", digits and
// optionally a point and more digits, at most 18 digits in all and not a
// negative zero: what the mirror's amount columns and the service's
// documents hold. It gives the same Decimal as apd's general parser,
// which allocates several times an amount (an export parses five an
// order). It reports false for anything else, which that parser decides.
func parsePlainAmount(s string, d *apd.Decimal) bool {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var (
		coeff        uint64
		digits, frac int
		point        bool
	)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			coeff = coeff*10 + uint64(c-'0')
			digits++
			if point {
				frac++
			}
		case c == '.' && !point && digits > 0:
			point = true
		default:
			return false
		}
	}
	if digits == 0 || digits > 18 || (point && frac == 0) || (neg && coeff == 0) {
		return false
	}
	d.Form, d.Negative, d.Exponent = apd.Finite, neg, int32(-frac)
	d.Coeff.SetUint64(coeff)
	return true
}

// MustAmount is ParseAmount for constants in code and tests.
func MustAmount(s string) Amount {
	a, err := ParseAmount(s)
	if err != nil {
		panic(err)
	}
	return a
}

// AmountFromInt returns n units.
func AmountFromInt(n int64) Amount {
	var a Amount
	a.d.SetInt64(n)
	return a
}

// AmountFromMinor returns n hundredths when scale is 2: n units of
// 10^-scale, as MinorAmount counts them.
func AmountFromMinor(n int64, scale int) Amount {
	var a Amount
	a.d.SetFinite(n, int32(-scale))
	return a
}

// String returns the amount in plain notation with the digits it was given.
func (a Amount) String() string {
	if a.d.Exponent > 0 && a.d.IsZero() {
		// apd writes a zero with a positive exponent (0E+3, from "0e3" or
		// 1E+3 - 1E+3) as "0000": not a number in JSON or anywhere else.
		z := a.d
		z.Exponent = 0
		return z.Text('f')
	}
	return a.d.Text('f')
}

// Sign returns -1, 0 or +1.
func (a Amount) Sign() int { return a.d.Sign() }

// DecimalPlaces is how many digits the amount has after the point, not
// counting trailing zeros: 10.50 has one, 10 has none.
func (a Amount) DecimalPlaces() int {
	var r apd.Decimal
	r.Reduce(&a.d)
	if r.Exponent >= 0 {
		return 0
	}
	return int(-r.Exponent)
}

// IsZero reports whether the amount is zero (0, 0.00, …).
func (a Amount) IsZero() bool { return a.d.IsZero() }

// Cmp compares numerically: 6.5 and 6.50 are equal.
func (a Amount) Cmp(b Amount) int { return a.d.Cmp(&b.d) }

// Equal reports numeric equality.
func (a Amount) Equal(b Amount) bool { return a.Cmp(b) == 0 }

// Identical reports equality of value and written digits: 6.5 and 6.50 are
// equal but not identical.
func (a Amount) Identical(b Amount) bool {
	// Without writing either: non-zero amounts with one exponent have one
	// text when their sign and coefficient are one; with two exponents of
	// at most 0, never, as their texts have as many decimals as the
	// exponent says. Zeros and positive exponents (650 and 65E+1) are
	// compared by their text, but for two zeros of one sign and exponent
	// (the 0.00 of most totals), which have one text.
	if a.d.Form == apd.Finite && b.d.Form == apd.Finite && a.d.IsZero() && b.d.IsZero() &&
		a.d.Exponent == b.d.Exponent && a.d.Negative == b.d.Negative {
		return true
	}
	if a.d.Form == apd.Finite && b.d.Form == apd.Finite && !a.d.IsZero() && !b.d.IsZero() {
		switch {
		case a.d.Exponent == b.d.Exponent:
			return a.d.Negative == b.d.Negative && a.d.Coeff.Cmp(&b.d.Coeff) == 0
		case a.d.Exponent <= 0 && b.d.Exponent <= 0:
			return false
		}
	}
	return a.String() == b.String()
}

// Add returns a+b exactly.
func (a Amount) Add(b Amount) Amount {
	var r Amount
	if _, err := moneyContext.Add(&r.d, &a.d, &b.d); err != nil {
		panic(fmt.Sprintf("amount %s + %s: %v", a, b, err))
	}
	return r
}

// Sub returns a-b exactly.
func (a Amount) Sub(b Amount) Amount {
	var r Amount
	if _, err := moneyContext.Sub(&r.d, &a.d, &b.d); err != nil {
		panic(fmt.Sprintf("amount %s - %s: %v", a, b, err))
	}
	return r
}

// MulInt returns a*n exactly, as for price times quantity.
func (a Amount) MulInt(n int64) Amount {
	var r, m Amount
	m.d.SetInt64(n)
	if _, err := moneyContext.Mul(&r.d, &a.d, &m.d); err != nil {
		panic(fmt.Sprintf("amount %s * %d: %v", a, n, err))
	}
	return r
}

// MarshalJSON encodes the amount as a JSON number with its own digits.
func (a Amount) MarshalJSON() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalJSON accepts a JSON number, a string holding a number, or null
// (which leaves zero).
func (a *Amount) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*a = Amount{}
		return nil
	}
	num := b
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		num = b[1 : len(b)-1]
	}
	// ParseAmount's fast path, which takes only digits, a sign and a
	// point (so a string of them needs no decoding), on a conversion that
	// does not escape: a short number is not copied to the heap.
	var v Amount
	if parsePlainAmount(string(num), &v.d) {
		*a = v
		return nil
	}
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("amount: %w", err)
		}
	}
	v, err := ParseAmount(s)
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// Value stores the amount as decimal text: TEXT in SQLite, NUMERIC in
// PostgreSQL.
func (a Amount) Value() (driver.Value, error) { return a.String(), nil }

// Scan reads decimal text (or an integer) from a SQL column.
func (a *Amount) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*a = Amount{}
		return nil
	case string:
		return a.scanString(v)
	case []byte:
		return a.scanString(string(v))
	case int64:
		*a = AmountFromInt(v)
		return nil
	default:
		return fmt.Errorf("scan amount: unsupported type %T", src)
	}
}

func (a *Amount) scanString(s string) error {
	v, err := ParseAmount(s)
	if err != nil {
		return fmt.Errorf("scan amount: %w", err)
	}
	*a = v
	return nil
}
