package webhook

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/tracing"
)

// DefaultRejectionFlushInterval is how often the counts of requests
// rejected before verification are written: a handful of rows a minute
// whatever the flood.
const DefaultRejectionFlushInterval = 10 * time.Second

// AccountConfig configures one extra merchant account.
type AccountConfig struct {
	// Secrets are its webhook secrets; several during a rotation.
	Secrets []string
}

// Config configures a Receiver.
type Config struct {
	// Secrets are the default account's webhook secrets (the portal's
	// 44-character secret); several are accepted during a rotation.
	Secrets []string
	// Insecure lets an account without secrets accept unsigned webhooks.
	// Accounts with secrets are verified regardless.
	Insecure bool
	// Accounts are extra accounts, served at Path/{name}. Names are letters,
	// digits, '-' and '_'.
	Accounts map[string]AccountConfig
	// Publisher makes accepted events durable. Required.
	Publisher ordersync.EventPublisher
	// Admit, when set, is asked before each publish: an error (the data's
	// disk below its watermark, a queue that cannot store) answers 503
	// with Retry-After at once, nothing published, instead of waiting for
	// a write to fail or time out.
	Admit func() error
	// Recorder logs the requests rejected after their signature was
	// verified (a signed body that is not an event); nil: they are only
	// counted.
	Recorder EventRecorder
	// Rejections keeps the per-minute counts of requests rejected before
	// they could be trusted (no valid signature, too large, malformed while
	// unsigned); nil: they are only counted and logged.
	Rejections RejectionRecorder
	// RejectionRetention is how long those counts are kept; default 72h.
	RejectionRetention time.Duration
	// RejectionMaxRows caps the rows of counts kept, the oldest minutes
	// going first; default 10,000.
	RejectionMaxRows int
	// RejectionSourcesPerMinute is how many distinct (account, source,
	// reason) rows one minute gets; the sources beyond are counted as
	// "other". Default 200.
	RejectionSourcesPerMinute int
	// RejectionFlushInterval is how often counts are written; default
	// DefaultRejectionFlushInterval.
	RejectionFlushInterval time.Duration
	// RejectionLogInterval is how often at most a WARN line sums up the
	// rejections; default 1m.
	RejectionLogInterval time.Duration
	// MaxBodyBytes is the largest body accepted; default 64 KiB. The
	// provider's webhooks are about 1 KB; the limit leaves 60 times that for
	// long metadata while bounding what an unsigned request can make the
	// receiver hold before its signature is checked.
	MaxBodyBytes int64
	// MaxBodyBytesInFlight bounds the memory held by bodies being read or
	// handled: each may hold its first 8 KiB (every real webhook fits)
	// without asking; bytes beyond come from this shared budget, and a
	// request that finds it spent is answered 503 with Retry-After.
	// Default 8 MiB.
	MaxBodyBytesInFlight int64
	// PublishTimeout bounds the wait for the queue's ack; default 5s.
	PublishTimeout time.Duration
	// RetryAfter is the Retry-After of a 503; default 5s.
	RetryAfter time.Duration
	// RecordBuffer is how many rejected requests wait for the recorder
	// before further ones are dropped (and counted); default 4096.
	RecordBuffer int
	// RecordTimeout bounds one RecordEvents call; default 5s.
	RecordTimeout time.Duration
	Registerer    prometheus.Registerer
	// Logger is named by the caller (the wiring gives it its component).
	Logger *slog.Logger
	// Clock stamps ReceivedAt; default time.Now.
	Clock func() time.Time
	// TrustedProxies are the peers (load balancers, TLS terminators) whose
	// X-Forwarded-For is believed when naming the client of a rejected
	// request; anyone else is named by the connection's address.
	TrustedProxies []netip.Prefix
	// Tracer traces each webhook's receive and publish; nil: off.
	Tracer *tracing.Tracer
}

func (c *Config) withDefaults() {
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 64 << 10
	}
	if c.MaxBodyBytesInFlight == 0 {
		c.MaxBodyBytesInFlight = 8 << 20
	}
	if c.RejectionRetention == 0 {
		c.RejectionRetention = 72 * time.Hour
	}
	if c.RejectionMaxRows == 0 {
		c.RejectionMaxRows = 10_000
	}
	if c.RejectionSourcesPerMinute == 0 {
		c.RejectionSourcesPerMinute = 200
	}
	if c.RejectionFlushInterval == 0 {
		c.RejectionFlushInterval = DefaultRejectionFlushInterval
	}
	if c.RejectionLogInterval == 0 {
		c.RejectionLogInterval = time.Minute
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = 5 * time.Second
	}
	if c.RetryAfter == 0 {
		c.RetryAfter = 5 * time.Second
	}
	if c.RecordBuffer == 0 {
		c.RecordBuffer = 4096
	}
	if c.RecordTimeout == 0 {
		c.RecordTimeout = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
}

func (c *Config) validate() error {
	if c.Publisher == nil {
		return errors.New("webhook receiver: Publisher is required")
	}
	if err := checkSecrets("webhook secret (Secrets)", c.Secrets, c.Insecure); err != nil {
		return err
	}
	for name, a := range c.Accounts {
		if name == ordersync.DefaultAccount {
			return fmt.Errorf("webhook receiver: Accounts[%q]: the default account's secrets go in Secrets", name)
		}
		if !ordersync.ValidName(name) {
			return fmt.Errorf("webhook receiver: Accounts[%q]: name must be %s", name, ordersync.NameRule)
		}
		if err := checkSecrets(fmt.Sprintf("webhook secret of account %q (Accounts[%q].Secrets)", name, name), a.Secrets, c.Insecure); err != nil {
			return err
		}
	}
	switch {
	case c.MaxBodyBytes < 0:
		return fmt.Errorf("webhook receiver: MaxBodyBytes %d must be positive", c.MaxBodyBytes)
	case c.MaxBodyBytesInFlight < c.MaxBodyBytes:
		return fmt.Errorf("webhook receiver: MaxBodyBytesInFlight %d must be at least MaxBodyBytes (%d)", c.MaxBodyBytesInFlight, c.MaxBodyBytes)
	case c.RejectionRetention < 0:
		return fmt.Errorf("webhook receiver: RejectionRetention %s must be positive", c.RejectionRetention)
	case c.RejectionSourcesPerMinute < 0:
		return fmt.Errorf("webhook receiver: RejectionSourcesPerMinute %d must be positive", c.RejectionSourcesPerMinute)
	case c.RejectionMaxRows < 2*c.RejectionSourcesPerMinute:
		return fmt.Errorf("webhook receiver: RejectionMaxRows %d must hold two minutes of RejectionSourcesPerMinute (%d)", c.RejectionMaxRows, c.RejectionSourcesPerMinute)
	case c.RejectionFlushInterval < 0:
		return fmt.Errorf("webhook receiver: RejectionFlushInterval %s must be positive", c.RejectionFlushInterval)
	case c.RejectionLogInterval < 0:
		return fmt.Errorf("webhook receiver: RejectionLogInterval %s must be positive", c.RejectionLogInterval)
	case c.PublishTimeout < 0:
		return fmt.Errorf("webhook receiver: PublishTimeout %s must be positive", c.PublishTimeout)
	case c.RetryAfter < 0:
		return fmt.Errorf("webhook receiver: RetryAfter %s must be positive", c.RetryAfter)
	case c.RecordBuffer < 0:
		return fmt.Errorf("webhook receiver: RecordBuffer %d must be positive", c.RecordBuffer)
	case c.RecordTimeout < 0:
		return fmt.Errorf("webhook receiver: RecordTimeout %s must be positive", c.RecordTimeout)
	}
	return nil
}

func checkSecrets(setting string, secrets []string, insecure bool) error {
	for i, s := range secrets {
		if strings.TrimSpace(s) == "" {
			return fmt.Errorf("webhook receiver: %s[%d] is empty", setting, i)
		}
	}
	if len(secrets) == 0 && !insecure {
		return fmt.Errorf("webhook receiver: no %s configured (set one, or enable insecure mode to accept unsigned webhooks)", setting)
	}
	return nil
}
