package ordersync

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// ID is a numeric identifier (orderId, productId) that arrives as a JSON
// number from the API but as a string in webhooks. It is kept as its decimal
// text; the empty ID means absent.
type ID string

// UnmarshalJSON accepts a number, a string or null.
func (id *ID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*id = ""
	case len(b) > 0 && b[0] == '"':
		s, ok := plainString(b)
		if !ok {
			if err := json.Unmarshal(b, &s); err != nil {
				return fmt.Errorf("id: %w", err)
			}
		}
		*id = ID(strings.TrimSpace(s))
	case plainInteger(b):
		*id = ID(b)
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("id: want a number or a string, got %.20s", b)
		}
		*id = ID(n.String())
	}
	return nil
}

// plainString is the text of a JSON string token that needs no decoding:
// between its quotes only valid UTF-8 without escapes or control
// characters, which is what the service writes in ids and times. False
// for anything else, which encoding/json then decodes (or refuses).
func plainString(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	in := b[1 : len(b)-1]
	ascii := true
	for _, c := range in {
		switch {
		case c < 0x20 || c == '"' || c == '\\':
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	if !ascii && !utf8.Valid(in) {
		return "", false
	}
	return string(in), true
}

// plainInteger reports whether b is a JSON number without fraction or
// exponent (-?(0|[1-9][0-9]*)), whose text is then the number's as
// json.Number would keep it.
func plainInteger(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || (b[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// MarshalJSON writes an all-digit ID as a number, as the API does, anything
// else as a string, and the empty ID as null.
func (id ID) MarshalJSON() ([]byte, error) {
	if id == "" {
		return []byte("null"), nil
	}
	// Only the canonical form is a JSON number: "007" is not one.
	if n, err := strconv.ParseUint(string(id), 10, 64); err == nil && strconv.FormatUint(n, 10) == string(id) {
		return []byte(id), nil
	}
	return json.Marshal(string(id))
}

// Timestamp is an instant in the service's format: ISO 8601 in UTC with
// milliseconds and Z. It decodes tolerantly (with or without fraction, with
// or without a zone, which then means UTC).
type Timestamp struct{ time.Time }

// TimestampLayout is the format the service writes.
const TimestampLayout = "2006-01-02T15:04:05.000Z"

var timestampLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999"}

// ParseTimestamp parses any of the accepted forms.
func ParseTimestamp(s string) (Timestamp, error) {
	s = strings.TrimSpace(s)
	for _, layout := range timestampLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			// 9999-12-31T23:59:59-01:00 is in year 10000 in UTC, which
			// the service's format cannot write.
			if t = t.UTC(); t.Year() > 9999 {
				return Timestamp{}, fmt.Errorf("parse timestamp %q: after year 9999 in UTC", s)
			}
			return Timestamp{t}, nil
		}
	}
	return Timestamp{}, fmt.Errorf("parse timestamp %q: not ISO 8601", s)
}

// String formats like the service.
func (t Timestamp) String() string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(TimestampLayout)
}

// MarshalJSON writes the service's format, or null for the zero time.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return []byte(`"` + t.String() + `"`), nil
}

// UnmarshalJSON accepts a string in any accepted form, or null.
func (t *Timestamp) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*t = Timestamp{}
		return nil
	}
	s, ok := plainString(b)
	if !ok {
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("timestamp: want a string, got %.30s", b)
		}
	}
	if s == "" {
		*t = Timestamp{}
		return nil
	}
	v, err := ParseTimestamp(s)
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// MetadataEntry is one name/value pair of an order's metadata as the API
// writes it.
type MetadataEntry struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Order is the order detail of GET /paymentlink/order/{orderCode}: the truth
// the mirror holds.
type Order struct {
	OrderID        ID              `json:"orderId"`
	OrderCode      string          `json:"orderCode"`
	OrderReference string          `json:"orderReference"`
	Name           string          `json:"name"`
	Description    string          `json:"description"`
	LineItems      []LineItem      `json:"lineItems"`
	OrderStatus    Status          `json:"orderStatus"`
	Subtotal       Amount          `json:"subtotal"`
	TotalDetails   Totals          `json:"totalDetails"`
	Total          Amount          `json:"total"`
	Metadata       []MetadataEntry `json:"metadata"`
	PaymentLinkURL string          `json:"paymentLinkUrl"`
	SuccessURL     string          `json:"successUrl"`
	CancelURL      string          `json:"cancelUrl"`
	Store          StoreInfo       `json:"store"`
	// Payment is nil until the order is paid; the service sends null, {} or
	// nothing at all for that, and all three decode to nil.
	Payment *Payment  `json:"payment"`
	Created Timestamp `json:"created"`

	// Raw is the document exactly as fetched, so fields the service adds
	// later are kept in the mirror. It is empty for an order built in code.
	Raw json.RawMessage `json:"-"`
}

// LineItem is one line of an order detail.
type LineItem struct {
	ProductID  ID      `json:"productId"`
	SKU        string  `json:"sku"`
	Name       string  `json:"name"`
	Price      Amount  `json:"price"`
	PromoPrice *Amount `json:"promoPrice"`
	Quantity   int     `json:"quantity"`
	ImageURL   string  `json:"imageUrl"`
	SubTotal   Amount  `json:"subTotal"`
}

// Totals is the breakdown between an order's subtotal and total.
type Totals struct {
	ShippingAmount  Amount `json:"shippingAmount"`
	DiscountAmount  Amount `json:"discountAmount"`
	SurchargeAmount Amount `json:"surchargeAmount"`
}

// StoreInfo is the merchant store an order belongs to.
type StoreInfo struct {
	Name           string `json:"name"`
	CountryCode    string `json:"countryCode"`
	CurrencyCode   string `json:"currencyCode"`
	CurrencySymbol string `json:"currencySymbol"`
	Locale         string `json:"locale"`
	Timezone       string `json:"timezone"`
}

// Payment is what the service records once an order is paid.
type Payment struct {
	AuthorizationCode string `json:"authorizationCode"`
	VoucherURL        string `json:"voucherUrl"`
	Buyer             *Buyer `json:"buyer"`
}

// Buyer is who paid. Its fields are personal data: never log them.
type Buyer struct {
	Name  string `json:"name"`
	Phone string `json:"phone"`
	Email string `json:"email"`
}

// IsEmpty reports whether the payment carries nothing, as the {} that some
// deployments send before an order is paid.
func (p *Payment) IsEmpty() bool {
	return p == nil || (p.AuthorizationCode == "" && p.VoucherURL == "" && (p.Buyer == nil || *p.Buyer == Buyer{}))
}

// DecodeOrder decodes an order detail document tolerantly and keeps the raw
// bytes in Order.Raw. Unknown fields are ignored; it accepts and refuses
// what encoding/json does (names matched without regard to case, the last
// of a name given twice winning, invalid UTF-8 in strings replaced).
func DecodeOrder(doc []byte) (*Order, error) {
	// null would decode to an empty order without complaint.
	if trimmed := bytes.TrimSpace(doc); len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("decode order detail: not a JSON object")
	}
	var o Order
	// The json/v2 decoder with encoding/json's semantics: the same
	// results, decoded without reflection per value.
	if err := jsonv2.Unmarshal(doc, &o, decodeOrderOptions); err != nil {
		return nil, fmt.Errorf("decode order detail: %w", err)
	}
	if o.Payment.IsEmpty() {
		o.Payment = nil
	}
	o.OrderStatus = Status(strings.ToUpper(string(o.OrderStatus)))
	o.Raw = append(json.RawMessage(nil), doc...)
	return &o, nil
}

// decodeOrderOptions are encoding/json's semantics for the json/v2
// decoder, which encoding/json/v2 only offers under GOEXPERIMENT=jsonv2.
var decodeOrderOptions = jsonv1.DefaultOptionsV1()

// OrderRef identifies an order of an account by whichever keys are known.
type OrderRef struct {
	Account   string
	Code      string
	ID        ID
	Reference string
	// ExpiresAt is when the link expires, when ordersync created it; the
	// reconciler looks at orders near or past expiry first.
	ExpiresAt time.Time
}
