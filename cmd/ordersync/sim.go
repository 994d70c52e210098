package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/sim"
)

// newSimCommand runs the simulator of the payment link service.
func newSimCommand() *cobra.Command {
	var (
		listen       string
		cfg          sim.Config
		language     string
		productsFile string
		logLevel     string
	)
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run a simulator of the payment link service",
		Long: `Run a simulator of the payment link service (interface version 2.0).

It serves POST /paymentlink/checkout and GET /paymentlink/order/{orderCode}
(Authorization: Bearer <secret key>), posts signed webhooks to --webhook-url,
and injects the faults the flags ask for, reproducibly under --seed.

The control API needs no key:
  POST /_sim/orders/{code}/pay        body optional {"name","phone","email"}
  POST /_sim/orders/{code}/cancel     PENDING -> CANCELLED
  POST /_sim/orders/{code}/finalize   PAID -> FINALIZED
  POST /_sim/orders/{code}/reverse    PAID -> CANCELLED
  POST /_sim/expire                   cancel PENDING orders past their expiry
  GET  /_sim/orders[/{code}]          the truth, without counting a fetch
  GET  /_sim/stats                    counters (fetches per order, webhooks, faults)
  GET|PUT /_sim/faults                read or replace the faults at run time

The secret keys may also come from ORDERSYNC_SIM_SECRET_KEY and
ORDERSYNC_SIM_WEBHOOK_SECRET, which keeps them out of the process list.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.SecretKey == "" {
				cfg.SecretKey = os.Getenv("ORDERSYNC_SIM_SECRET_KEY")
			}
			if cfg.WebhookSecret == "" {
				cfg.WebhookSecret = os.Getenv("ORDERSYNC_SIM_WEBHOOK_SECRET")
			}
			if cfg.SecretKey == "" {
				return fmt.Errorf("sim: --secret-key (or ORDERSYNC_SIM_SECRET_KEY) is required")
			}
			cfg.Language = ordersync.Language(language)
			if productsFile != "" {
				products, err := readProducts(productsFile)
				if err != nil {
					return err
				}
				cfg.Products = products
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("sim: --log-level %q: %w", logLevel, err)
			}
			cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level})).With("component", "sim")
			s, err := sim.New(cfg)
			if err != nil {
				return err
			}
			return s.ListenAndServe(cmd.Context(), listen, func(baseURL string) {
				hooks := "webhooks off"
				if cfg.WebhookURL != "" {
					hooks = "webhooks → " + cfg.WebhookURL
					if cfg.WebhookSecret == "" {
						hooks += " unsigned"
					}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "sim: listening on %s (secret key set, %s, seed %d)\n", baseURL, hooks, s.Seed())
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8090", "address to serve the API on (port 0 picks one)")
	f.StringVar(&cfg.SecretKey, "secret-key", "", "secret key API calls must present as a Bearer token (required)")
	f.StringVar(&cfg.LinkBaseURL, "link-base-url", sim.DefaultLinkBaseURL, "pay host; a link is this URL + \"/\" + orderCode")
	f.StringVar(&language, "language", string(ordersync.Spanish), "language of validation messages: es or en")
	f.StringVar(&productsFile, "products", "", "JSON file of the portal catalogue: [{\"sku\",\"name\",\"price\",\"imageUrl\"}] (default a few demo products)")
	f.Int64Var(&cfg.Seed, "seed", 0, "seed of order codes and fault decisions; 0 picks one (printed at start)")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")

	f.StringVar(&cfg.Store.Name, "store-name", sim.DefaultStore.Name, "store name in order details")
	f.StringVar(&cfg.Store.CountryCode, "store-country", sim.DefaultStore.CountryCode, "store country code")
	f.StringVar(&cfg.Store.CurrencyCode, "store-currency", sim.DefaultStore.CurrencyCode, "store currency code")
	f.StringVar(&cfg.Store.CurrencySymbol, "store-currency-symbol", sim.DefaultStore.CurrencySymbol, "store currency symbol")
	f.StringVar(&cfg.Store.Locale, "store-locale", sim.DefaultStore.Locale, "store locale")
	f.StringVar(&cfg.Store.Timezone, "store-timezone", sim.DefaultStore.Timezone, "store time zone")

	f.StringVar(&cfg.WebhookURL, "webhook-url", "", "URL webhooks are posted to (empty: no webhooks)")
	f.StringVar(&cfg.WebhookSecret, "webhook-secret", "", "HMAC-SHA256 key of the "+sim.SignatureHeader+" header (empty: unsigned)")
	f.IntVar(&cfg.WebhookMaxAttempts, "webhook-max-attempts", sim.DefaultWebhookMaxAttempts, "deliveries of one webhook before giving up")
	f.DurationVar(&cfg.WebhookBackoff, "webhook-backoff", sim.DefaultWebhookBackoff, "wait after the first failed delivery; doubles with jitter up to 5s")
	f.IntVar(&cfg.WebhookConcurrency, "webhook-concurrency", sim.DefaultWebhookConcurrency, "webhook deliveries in flight")
	f.DurationVar(&cfg.WebhookTimeout, "webhook-timeout", sim.DefaultWebhookTimeout, "time limit of one delivery attempt")
	f.DurationVar(&cfg.SweepInterval, "sweep-interval", sim.DefaultSweepInterval, "how often expired links are cancelled in the background")

	fl := &cfg.Faults
	f.Float64Var(&fl.DuplicateRate, "duplicate-rate", 0, "probability that a webhook is sent twice")
	f.Float64Var(&fl.ReorderRate, "reorder-rate", 0, "probability that a webhook is held back by --reorder-delay so later ones overtake it")
	f.DurationVar(&fl.ReorderDelay, "reorder-delay", sim.DefaultReorderDelay, "how long a reordered webhook is held back")
	f.DurationVar(&fl.DelayMax, "delay-max", 0, "every webhook is delayed by a random time below this")
	f.Float64Var(&fl.DropRate, "drop-rate", 0, "probability that a webhook is never delivered")
	f.DurationVar(&fl.GetLatency, "get-latency", 0, "latency added to every GET /paymentlink/order")
	f.Float64Var(&fl.ServerErrorRate, "server-error-rate", 0, "probability that an API call is answered 500")
	f.Float64Var(&fl.RateLimitRate, "rate-limit-rate", 0, "probability that an API call is answered 429 with Retry-After")
	f.DurationVar(&fl.RetryAfter, "retry-after", sim.DefaultRetryAfter, "Retry-After of 429 answers (rounded up to whole seconds)")
	f.Float64Var(&fl.HangRate, "hang-rate", 0, "probability that an API call hangs for --hang-duration (or until the client leaves)")
	f.DurationVar(&fl.HangDuration, "hang-duration", sim.DefaultHangDuration, "how long a hanging API call hangs")
	f.Float64Var(&fl.OtherProductRate, "other-product-rate", 0, "probability of an extra COUPON_APP webhook after an order event")
	f.Float64Var(&fl.SubscriptionRate, "subscription-rate", 0, "probability of an extra subscription webhook after an order event")
	return cmd
}

func readProducts(path string) ([]sim.Product, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sim: read products: %w", err)
	}
	var products []sim.Product
	if err := json.Unmarshal(b, &products); err != nil {
		return nil, fmt.Errorf("sim: decode products %s: %w", path, err)
	}
	return products, nil
}
