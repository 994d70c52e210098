package app

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/datadir"
	"github.com/ordersync/ordersync/worker"
)

// minAckWait is the shortest ack_wait: three times the interval at which
// the pool reports the events it still holds (worker.PoolConfig's
// ExtendInterval, 5 s), so that a held event is reported before it can be
// redelivered.
const minAckWait = 15 * time.Second

// ValidateServe names every missing or wrong setting `serve` needs, all at
// once.
func (c *Config) ValidateServe() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	names := AccountSettings(ordersync.DefaultAccount)
	if c.APIBaseURL == "" {
		bad("missing setting: %s", names.APIBaseURL)
	} else if err := CheckBaseURL(c.APIBaseURL); err != nil {
		bad("bad setting: %s: %w", accountBaseURL.key, err)
	}
	if c.SecretKey == "" {
		bad("missing setting: %s", names.SecretKey)
	}
	if len(c.WebhookSecrets) == 0 && !c.InsecureNoWebhookSignature {
		bad("missing setting: %s; to accept unsigned webhooks anyway, set insecure_no_webhook_signature", names.WebhookSecrets)
	}
	if c.Workers < 1 {
		bad("bad setting: workers must be ≥ 1, got %d", c.Workers)
	}
	if c.OutboxRetention < 0 || c.EventLogRetention < 0 {
		bad("bad setting: outbox_retention and event_log_retention must not be negative, got %s and %s", c.OutboxRetention, c.EventLogRetention)
	}
	if c.DataDir == "" {
		bad("missing setting: data_dir (ORDERSYNC_DATA_DIR or --data-dir)")
	}
	errs = append(errs, c.checkAccounts()...)
	if !ordersync.ValidName(c.NATSNamespace) {
		bad("bad setting: nats_namespace %q (want %s)", c.NATSNamespace, ordersync.NameRule)
	}
	if c.ReconcileEvidenceWindow <= 0 || c.ReconcileEvidenceHold <= 0 || c.ReceiverHeartbeat <= 0 || c.RejectionFlushInterval <= 0 {
		bad("bad setting: reconcile_evidence_window, reconcile_evidence_hold, receiver_heartbeat and rejection_flush_interval must be > 0, got %s, %s, %s, %s",
			c.ReconcileEvidenceWindow, c.ReconcileEvidenceHold, c.ReceiverHeartbeat, c.RejectionFlushInterval)
	}
	if c.AckWait < minAckWait {
		bad("bad setting: ack_wait must be ≥ %s (three times the interval at which workers report events in progress), got %s", minAckWait, c.AckWait)
	}
	if c.LeaderTTL < 300*time.Millisecond {
		bad("bad setting: leader_ttl must be ≥ 300ms, got %s", c.LeaderTTL)
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		bad("bad setting: tls_cert_file and tls_key_file go together")
	}
	if c.ShutdownDrain < 0 {
		bad("bad setting: shutdown_drain must not be negative, got %s", c.ShutdownDrain)
	}
	if c.EndpointSecretGrace < 0 {
		bad("bad setting: endpoint_secret_grace must not be negative, got %s", c.EndpointSecretGrace)
	}
	if c.DeliveryConcurrency < 1 {
		bad("bad setting: delivery_concurrency must be at least 1, got %d", c.DeliveryConcurrency)
	}
	if c.DeliveryTimeout <= 0 {
		bad("bad setting: delivery_timeout must be positive, got %s", c.DeliveryTimeout)
	}
	if c.AuditRetention < 0 {
		bad("bad setting: audit_retention must not be negative, got %s", c.AuditRetention)
	}
	if c.ReplayJobRetention < 0 {
		bad("bad setting: replay_job_retention must not be negative, got %s", c.ReplayJobRetention)
	}
	for _, check := range []func() error{
		func() error { _, err := parseRoles(c.Role); return err },
		func() error { return c.checkAdminTokens() },
		func() error { _, err := parseCIDRs(c.TrustedProxies); return err },
		func() error {
			if _, err := datadir.ParseWatermark(c.MinFreeSpace); err != nil {
				return fmt.Errorf("bad setting: min_free_space %w", err)
			}
			return nil
		},
		c.checkAdminListen,
		c.checkReconcile,
		func() error {
			if err := c.TracingConfig().Validate(); err != nil {
				return fmt.Errorf("bad setting: %w", err)
			}
			return nil
		},
		func() error { _, err := c.EndpointParams(); return err },
	} {
		if err := check(); err != nil {
			errs = append(errs, err)
		}
	}
	return joinProblems(errs)
}

// CheckBaseURL refuses a base URL the client could not call, in the terms
// of the setting rather than of the client's code.
func CheckBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http or https URL (like https://api.example.com)", s)
	}
	return nil
}

// checkReconcile refuses the settings of the reconciler's former passes,
// saying what replaces them, except reconcile_interval 0, which still turns
// the reconciler off.
func (c *Config) checkReconcile() error {
	const replaced = "the reconciler now checks each order when its schedule says it is due, " +
		"spending reconcile_rps upstream requests per second (ORDERSYNC_RECONCILE_RPS or --reconcile-rps, default %v; up to 1.5 times as many for a minute after evidence of lost webhooks); " +
		"reconcile_interval: 0 or reconcile_rps: 0 turns it off"
	switch {
	case c.ReconcileBudget != 0:
		interval, remove := time.Minute, "reconcile_budget"
		if c.ReconcileInterval > 0 {
			interval, remove = c.ReconcileInterval, "reconcile_budget and reconcile_interval"
		}
		return fmt.Errorf("bad setting: reconcile_budget %d (orders per pass, %.2f requests per second with passes every %s) is replaced by reconcile_rps; "+
			replaced+"; remove %s", c.ReconcileBudget, float64(c.ReconcileBudget)/interval.Seconds(), interval, worker.DefaultReconcileBudget, remove)
	case c.ReconcileInterval > 0:
		return fmt.Errorf("bad setting: reconcile_interval %s: the reconciler no longer runs in passes; "+replaced+
			"; remove reconcile_interval", c.ReconcileInterval, worker.DefaultReconcileBudget)
	case c.ReconcileRPS < 0 || math.IsNaN(c.ReconcileRPS) || math.IsInf(c.ReconcileRPS, 0):
		return fmt.Errorf("bad setting: reconcile_rps must be a finite number ≥ 0, got %v", c.ReconcileRPS)
	}
	return nil
}

// reconcileOn reports whether this deployment runs the reconciler.
func (c *Config) reconcileOn() bool {
	return c.ReconcileRPS > 0 && c.ReconcileInterval != 0
}

func parseCIDRs(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			if a, aerr := netip.ParseAddr(s); aerr == nil {
				p = netip.PrefixFrom(a, a.BitLen())
			} else {
				return nil, fmt.Errorf("bad setting: trusted_proxies entry %q is not a CIDR or an address", s)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// checkAdminTokens names every token that would make the roles or the
// audit trail ambiguous.
func (c *Config) checkAdminTokens() error {
	if err := ordersync.ValidateAdminTokens(c.AdminTokens); err != nil {
		return fmt.Errorf("bad setting: admin_tokens: %w", err)
	}
	return nil
}

// checkAdminListen refuses an admin address beyond loopback unless the API
// requires a token.
func (c *Config) checkAdminListen() error {
	host, _, err := net.SplitHostPort(c.AdminListen)
	if err != nil {
		return fmt.Errorf("bad setting: admin_listen %q: %w", c.AdminListen, err)
	}
	if host == "localhost" || len(c.AdminTokens) > 0 {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("bad setting: admin_listen %q is beyond loopback and no admin_tokens are set; "+
			"set ORDERSYNC_ADMIN_TOKEN (or admin_tokens) to expose the admin API", c.AdminListen)
	}
	return nil
}
