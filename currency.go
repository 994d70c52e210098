package ordersync

import (
	"strconv"
	"strings"
)

// minorUnits are the decimal places of ISO 4217 currencies (the list's
// "minor unit"), for the currencies of the regions the service's stores
// are in and the world's most traded ones. A currency not listed is not
// known: amounts for it are held to MaxMinorUnits.
var minorUnits = map[string]int{
	// The Americas.
	"USD": 2, "CAD": 2, "MXN": 2, "GTQ": 2, "HNL": 2, "NIO": 2, "CRC": 2, "PAB": 2, "DOP": 2, "JMD": 2,
	"TTD": 2, "BZD": 2, "COP": 2, "VES": 2, "PEN": 2, "BOB": 2, "BRL": 2, "ARS": 2, "UYU": 2, "PYG": 0,
	"CLP": 0, "GYD": 2, "SRD": 2, "HTG": 2, "CUP": 2, "BSD": 2, "BBD": 2, "XCD": 2, "KYD": 2, "BMD": 2,
	// Europe.
	"EUR": 2, "GBP": 2, "CHF": 2, "SEK": 2, "NOK": 2, "DKK": 2, "PLN": 2, "CZK": 2, "HUF": 2, "RON": 2,
	"ISK": 0, "TRY": 2, "UAH": 2,
	// Asia, Oceania, Africa, the Middle East.
	"JPY": 0, "KRW": 0, "VND": 0, "IDR": 2, "CNY": 2, "HKD": 2, "TWD": 2, "SGD": 2, "INR": 2, "PHP": 2,
	"THB": 2, "MYR": 2, "AUD": 2, "NZD": 2, "ZAR": 2, "NGN": 2, "KES": 2, "EGP": 2, "ILS": 2, "AED": 2,
	"SAR": 2, "QAR": 2, "BHD": 3, "KWD": 3, "OMR": 3, "JOD": 3, "IQD": 3, "LYD": 3, "TND": 3,
}

// MaxMinorUnits is the most decimal places an amount may have when the
// store's currency is not known: the most any listed currency has.
const MaxMinorUnits = 3

// MinorUnits returns the decimal places of an ISO 4217 currency code, in
// any letter case, and whether the currency is known.
func MinorUnits(currency string) (int, bool) {
	n, ok := minorUnits[strings.ToUpper(strings.TrimSpace(currency))]
	return n, ok
}

// MinorScale is the number of decimal places MinorAmount counts in: the
// currency's minor units, or MaxMinorUnits when the currency is not known.
func MinorScale(currency string) int {
	if n, ok := MinorUnits(currency); ok {
		return n
	}
	return MaxMinorUnits
}

// MinorAmount returns a as a whole number of the currency's minor units at
// MinorScale (1799 for 17.99 USD, 1500 for 1.5 KWD), so that sums of them
// are exact in any database. It reports false when no int64 says the amount
// exactly: more decimal places than the scale (10.999 USD, which the
// service may send) or beyond the int64 range; a caller never rounds.
func MinorAmount(a Amount, currency string) (int64, bool) {
	scale := MinorScale(currency)
	if a.DecimalPlaces() > scale {
		return 0, false
	}
	s, neg := strings.CutPrefix(a.String(), "-")
	whole, frac, _ := strings.Cut(s, ".")
	// The places beyond the scale are zeros (DecimalPlaces said so).
	frac = (frac + strings.Repeat("0", scale))[:scale]
	digits := whole + frac
	if neg {
		digits = "-" + digits
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}
