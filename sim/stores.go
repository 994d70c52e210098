package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ordersync/ordersync"
)

// MadridStore is a second store the simulator plays, in Spain selling in
// EUR: with DefaultStore, the demo's and tests' stores of two currencies
// and two time zones.
var MadridStore = ordersync.StoreInfo{
	Name:           "Tienda Madrid",
	CountryCode:    "ES",
	CurrencyCode:   "EUR",
	CurrencySymbol: "€",
	Locale:         "es-ES",
	Timezone:       "Europe/Madrid",
}

// phonePlans are the countries whose buyers' phone numbers the simulator
// writes: the international calling code and the national number of a
// mobile line (a format verb taking the buyer's index).
var phonePlans = map[string]struct{ code, national string }{
	"SV": {"+503", "7%07d"},
	"ES": {"+34", "6%08d"},
}

// CallingCode is the international calling code of a store's country
// ("+503" for SV), and whether the simulator knows it.
func CallingCode(country string) (string, bool) {
	p, ok := phonePlans[strings.ToUpper(country)]
	return p.code, ok
}

// Store is the merchant store of the simulator's orders.
func (s *Server) Store() ordersync.StoreInfo { return s.cfg.Store }

// Buyer is the i-th simulated buyer of the store: a name, an email and a
// mobile number of the store's country, with its calling code.
func (s *Server) Buyer(i int) ordersync.Buyer {
	b := ordersync.Buyer{Name: fmt.Sprintf("Buyer %d", i), Email: fmt.Sprintf("buyer%d@example.com", i)}
	if p, ok := phonePlans[strings.ToUpper(s.cfg.Store.CountryCode)]; ok {
		b.Phone = p.code + fmt.Sprintf(p.national, i)
	}
	return b
}

// defaultBuyer pays when no buyer is given: DefaultBuyer, with a phone
// number of the store's country.
func (s *Server) defaultBuyer() ordersync.Buyer {
	b := DefaultBuyer
	if p, ok := phonePlans[strings.ToUpper(s.cfg.Store.CountryCode)]; ok {
		b.Phone = p.code + fmt.Sprintf(p.national, 0)
	}
	return b
}

// validateStore checks what the order details say of the store: a zone
// and a currency a client can read, and a country whose phone numbers the
// simulator writes.
func validateStore(st ordersync.StoreInfo) error {
	if _, err := ordersync.ParseZone(st.Timezone); err != nil || st.Timezone == "" {
		return fmt.Errorf("sim config: Store.Timezone %q is not an IANA time zone", st.Timezone)
	}
	if _, ok := ordersync.MinorUnits(st.CurrencyCode); !ok {
		return fmt.Errorf("sim config: Store.CurrencyCode %q is not an ISO 4217 currency", st.CurrencyCode)
	}
	if _, ok := CallingCode(st.CountryCode); !ok {
		known := slices.Sorted(maps.Keys(phonePlans))
		return fmt.Errorf("sim config: Store.CountryCode %q: the simulator writes phone numbers of %s only", st.CountryCode, strings.Join(known, ", "))
	}
	return nil
}
