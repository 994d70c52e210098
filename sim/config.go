package sim

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
)

// Product is an item of the portal catalogue that Method 1 line items refer
// to by SKU.
type Product struct {
	SKU      string           `json:"sku"`
	Name     string           `json:"name"`
	Price    ordersync.Amount `json:"price"`
	ImageURL string           `json:"imageUrl"`
}

// Config configures a Server. Only SecretKey is required.
type Config struct {
	// SecretKey is the key API calls must present as "Authorization: Bearer
	// <SecretKey>".
	SecretKey string
	// LinkBaseURL is the pay host; an order's link is LinkBaseURL + "/" +
	// orderCode. Default "https://pay.example.test".
	LinkBaseURL string
	// Store is the merchant store every order belongs to (the store block
	// of each order detail): its currency, its time zone and the country of
	// its buyers' phone numbers (CallingCode). Default DefaultStore, in El
	// Salvador selling in USD; MadridStore is a second.
	Store ordersync.StoreInfo
	// Language of the messages of 400 answers. Default Spanish.
	Language ordersync.Language
	// Products is the portal catalogue. Default DefaultProducts().
	Products []Product

	// WebhookURL receives order events; empty means no webhooks are sent.
	WebhookURL string
	// WebhookSecret is the HMAC key of the X-H4B-Hmac-Sha256 header. Empty
	// sends unsigned webhooks.
	WebhookSecret string
	// WebhookMaxAttempts bounds the deliveries of one event. Default 20.
	WebhookMaxAttempts int
	// WebhookBackoff is the wait after the first failed delivery; it doubles
	// with jitter up to 5s. Default 100ms.
	WebhookBackoff time.Duration
	// WebhookConcurrency is the number of deliveries in flight. Default 16.
	WebhookConcurrency int
	// WebhookTimeout bounds one delivery attempt. Default 10s.
	WebhookTimeout time.Duration

	// Clock is the time orders are created, paid and expired by. Default
	// time.Now. Delivery delays and backoff always use real time.
	Clock func() time.Time
	// SweepInterval is how often PENDING orders past their expiry are
	// cancelled in the background (reads expire them too). Default 1s.
	SweepInterval time.Duration

	// Faults are the faults injected from the start; SetFaults changes them.
	Faults Faults
	// Seed makes order codes, fault decisions and jitter reproducible. Zero
	// picks a seed from the clock; Stats reports the seed in use.
	Seed int64

	// Logger is named by the caller (for example with its component).
	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultLinkBaseURL        = "https://pay.example.test"
	DefaultWebhookMaxAttempts = 20
	DefaultWebhookBackoff     = 100 * time.Millisecond
	MaxWebhookBackoff         = 5 * time.Second
	DefaultWebhookConcurrency = 16
	DefaultWebhookTimeout     = 10 * time.Second
	DefaultSweepInterval      = time.Second
)

// DefaultStore is the store of Config when none is given.
var DefaultStore = ordersync.StoreInfo{
	Name:           "Tienda Demo",
	CountryCode:    "SV",
	CurrencyCode:   "USD",
	CurrencySymbol: "$",
	Locale:         "es-SV",
	Timezone:       "America/El_Salvador",
}

// DefaultProducts returns the catalogue of Config when none is given.
func DefaultProducts() []Product {
	return []Product{
		{SKU: "COMBO-CLASICO", Name: "Combo Clásico", Price: ordersync.MustAmount("6.50"), ImageURL: "https://img.example.test/combo-clasico.png"},
		{SKU: "PUPUSA-REVUELTA", Name: "Pupusa Revuelta", Price: ordersync.MustAmount("0.75"), ImageURL: "https://img.example.test/pupusa-revuelta.png"},
		{SKU: "CAFE-ORGANICO-1LB", Name: "Café Orgánico 1 lb", Price: ordersync.MustAmount("12.99"), ImageURL: "https://img.example.test/cafe-organico.png"},
		{SKU: "CAMISETA-M", Name: "Camiseta Talla M", Price: ordersync.MustAmount("15.00"), ImageURL: ""},
	}
}

func (c Config) withDefaults() Config {
	if c.LinkBaseURL == "" {
		c.LinkBaseURL = DefaultLinkBaseURL
	}
	c.LinkBaseURL = strings.TrimRight(c.LinkBaseURL, "/")
	if c.Store == (ordersync.StoreInfo{}) {
		c.Store = DefaultStore
	}
	if c.Language == "" {
		c.Language = ordersync.Spanish
	}
	if c.Products == nil {
		c.Products = DefaultProducts()
	}
	if c.WebhookMaxAttempts == 0 {
		c.WebhookMaxAttempts = DefaultWebhookMaxAttempts
	}
	if c.WebhookBackoff == 0 {
		c.WebhookBackoff = DefaultWebhookBackoff
	}
	if c.WebhookConcurrency == 0 {
		c.WebhookConcurrency = DefaultWebhookConcurrency
	}
	if c.WebhookTimeout == 0 {
		c.WebhookTimeout = DefaultWebhookTimeout
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.SweepInterval == 0 {
		c.SweepInterval = DefaultSweepInterval
	}
	c.Faults = c.Faults.withDefaults()
	if c.Seed == 0 {
		c.Seed = time.Now().UnixNano()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	if c.SecretKey == "" {
		return fmt.Errorf("sim config: SecretKey is required")
	}
	if err := absoluteURL(c.LinkBaseURL); err != nil {
		return fmt.Errorf("sim config: LinkBaseURL: %w", err)
	}
	if c.WebhookURL != "" {
		if err := absoluteURL(c.WebhookURL); err != nil {
			return fmt.Errorf("sim config: WebhookURL: %w", err)
		}
	}
	if c.Language != ordersync.Spanish && c.Language != ordersync.English {
		return fmt.Errorf("sim config: Language %q: want %q or %q", c.Language, ordersync.Spanish, ordersync.English)
	}
	if err := validateStore(c.Store); err != nil {
		return err
	}
	seen := make(map[string]bool, len(c.Products))
	for i, p := range c.Products {
		switch {
		case strings.TrimSpace(p.SKU) == "":
			return fmt.Errorf("sim config: Products[%d].SKU is empty", i)
		case seen[p.SKU]:
			return fmt.Errorf("sim config: Products[%d].SKU %q is repeated", i, p.SKU)
		case strings.TrimSpace(p.Name) == "":
			return fmt.Errorf("sim config: Products[%d].Name is empty", i)
		case p.Price.Sign() <= 0:
			return fmt.Errorf("sim config: Products[%d].Price %s is not positive", i, p.Price)
		}
		seen[p.SKU] = true
	}
	switch {
	case c.WebhookMaxAttempts < 1:
		return fmt.Errorf("sim config: WebhookMaxAttempts %d is below 1", c.WebhookMaxAttempts)
	case c.WebhookBackoff < 0:
		return fmt.Errorf("sim config: WebhookBackoff %s is negative", c.WebhookBackoff)
	case c.WebhookConcurrency < 1:
		return fmt.Errorf("sim config: WebhookConcurrency %d is below 1", c.WebhookConcurrency)
	case c.WebhookTimeout < 0:
		return fmt.Errorf("sim config: WebhookTimeout %s is negative", c.WebhookTimeout)
	case c.SweepInterval < 0:
		return fmt.Errorf("sim config: SweepInterval %s is negative", c.SweepInterval)
	}
	if err := c.Faults.validate(); err != nil {
		return fmt.Errorf("sim config: %w", err)
	}
	return nil
}

func absoluteURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("parse %q: %w", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http or https URL", s)
	}
	return nil
}
