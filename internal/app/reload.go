package app

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersync/ordersync/metrics"
	"github.com/ordersync/ordersync/paymentlink"
)

// reloadMetrics say whether the last reload was refused: `systemctl
// reload` cannot, since the signal is sent before the file is read.
type reloadMetrics struct {
	lastSuccessful prometheus.Gauge
	reloads        *prometheus.CounterVec
}

func newReloadMetrics(reg prometheus.Registerer) (reloadMetrics, error) {
	m := reloadMetrics{
		lastSuccessful: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ordersync_config_last_reload_successful",
			Help: "1 when the configuration in force is the last one read (at start or by a reload), 0 when the last reload was refused."}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ordersync_config_reloads_total",
			Help: "Reloads of the configuration (SIGHUP) by result: applied or refused."}, []string{"result"}),
	}
	m.lastSuccessful.Set(1)
	for _, r := range []string{"applied", "refused"} {
		m.reloads.WithLabelValues(r)
	}
	return m, metrics.RegisterAll(reg, metrics.Of(&m.lastSuccessful), metrics.Of(&m.reloads))
}

// ReloadRefused records a reload refused before it reached the program: a
// configuration that did not load.
func (p *Program) ReloadRefused(err error) {
	p.logger.Error("reload refused; the settings in force are kept", "err", err)
	p.reloadMetrics.refused()
}

func (m reloadMetrics) refused() {
	m.lastSuccessful.Set(0)
	m.reloads.WithLabelValues("refused").Inc()
}

// Reloaded is what a reload changed, by setting name; never a value.
type Reloaded struct {
	// Applied are the settings now in force.
	Applied []string
	// NeedRestart are the settings that changed but take effect only when
	// the process restarts; the process keeps the ones it started with.
	NeedRestart []string
}

// ParseLogLevel reads log_level.
func ParseLogLevel(s string) (slog.Level, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(s)); err != nil {
		return lv, fmt.Errorf("bad setting: log_level %q (want debug, info, warn or error)", s)
	}
	return lv, nil
}

// SetLogLevelVar is the level of the program's logger, which Reload sets
// to log_level. Without it a changed log_level needs a restart.
func (p *Program) SetLogLevelVar(lv *slog.LevelVar) {
	p.reloadMu.Lock()
	defer p.reloadMu.Unlock()
	p.level = lv
}

// Reload brings the settings that can change while the process runs to
// those of next: the admin tokens and their roles, the webhook secrets and
// the secret keys of the accounts served, the file's endpoints (a replaced
// endpoint secret keeps signing for endpoint_secret_grace) and the log
// level. next is validated whole first: on any problem nothing changes and
// the error says why. Other settings that changed are reported as needing
// a restart and left as they were. Reload logs what it did, naming
// settings, never their values.
func (p *Program) Reload(ctx context.Context, next Config) (Reloaded, error) {
	p.reloadMu.Lock()
	defer p.reloadMu.Unlock()
	r, level, err := p.reload(ctx, next)
	if err != nil {
		p.logger.Error("reload refused; the settings in force are kept", "err", err)
		p.reloadMetrics.refused()
		return r, err
	}
	p.reloadMetrics.lastSuccessful.Set(1)
	p.reloadMetrics.reloads.WithLabelValues("applied").Inc()
	switch {
	case len(r.Applied) == 0 && len(r.NeedRestart) == 0:
		p.logger.Info("reloaded: no setting changed")
	default:
		if len(r.Applied) > 0 {
			p.logger.Info("reloaded", "applied", r.Applied)
		}
		if len(r.NeedRestart) > 0 {
			p.logger.Warn("settings changed that need a restart; not applied", "needs_restart", r.NeedRestart)
		}
	}
	// The level changes last, so that its own change is logged at the
	// level the operator was watching.
	if p.level != nil {
		p.level.Set(level)
	}
	return r, nil
}

// reload applies next and returns what changed and the log level to set.
func (p *Program) reload(ctx context.Context, next Config) (Reloaded, slog.Level, error) {
	if err := next.ValidateServe(); err != nil {
		return Reloaded{}, 0, err
	}
	level, err := ParseLogLevel(next.LogLevel)
	if err != nil {
		return Reloaded{}, 0, err
	}
	cur := p.live
	upd, r := reloadable(cur, next, p.level != nil)
	// What will be in force, the settings that need a restart as they
	// were, must hold together too (say admin tokens and admin_listen).
	if err := upd.ValidateServe(); err != nil {
		return Reloaded{}, 0, fmt.Errorf("with the settings that need a restart as they are: %w", err)
	}
	for name, a := range upd.Upstreams() {
		if err := paymentlink.CheckSecretKey(a.SecretKey); err != nil {
			return Reloaded{}, 0, fmt.Errorf("bad setting: %s: %w", AccountSettings(name).SecretKey, err)
		}
	}
	if len(r.Applied) == 0 {
		return r, level, nil
	}

	// The endpoints first: their write to the database is the one step
	// that can fail, and nothing else has changed yet if it does.
	if !reflect.DeepEqual(cur.Endpoints, upd.Endpoints) {
		params, err := upd.EndpointParams()
		if err != nil {
			return Reloaded{}, 0, err
		}
		if err := p.db.SyncConfigEndpoints(ctx, params, p.cfg.EndpointSecretGrace); err != nil {
			return Reloaded{}, 0, fmt.Errorf("write the configured endpoints: %w", err)
		}
		if p.dispatcher != nil {
			p.dispatcher.Notify()
		}
	}
	if err := p.api.SetTokens(upd.AdminTokens); err != nil {
		return Reloaded{}, 0, err // ValidateServe checked them
	}
	if p.receiver != nil {
		secrets := map[string][]string{}
		for name, a := range upd.Upstreams() {
			secrets[name] = a.WebhookSecrets
		}
		if err := p.receiver.SetSecrets(secrets); err != nil {
			return Reloaded{}, 0, err // ValidateServe checked them
		}
	}
	for name, a := range upd.Upstreams() {
		if err := p.clients[name].SetSecretKey(a.SecretKey); err != nil {
			return Reloaded{}, 0, err // checked above
		}
	}
	p.live = upd
	return r, level, nil
}

// reloadable is cur with next's values of the settings a reload applies,
// and the names of those that changed, and of the others that changed.
// An account added or removed, or whose service URL changed, needs a
// restart; its secrets can change in place.
func reloadable(cur, next Config, level bool) (Config, Reloaded) {
	var r Reloaded
	changed := func(name string, applies bool) {
		if applies {
			r.Applied = append(r.Applied, name)
		} else {
			r.NeedRestart = append(r.NeedRestart, name)
		}
	}
	for _, st := range settings {
		switch {
		case st.key == "admin_tokens" || st.key == "admin_viewer_tokens":
			// Compared whole below, names and roles included.
		case st.set.show(&cur) != st.set.show(&next):
			changed(st.key, st.reload && (st.key != "log_level" || level))
		}
	}
	upd := cur
	if !slices.Equal(cur.AdminTokens, next.AdminTokens) {
		changed("admin_tokens", true)
		upd.AdminTokens = slices.Clone(next.AdminTokens)
	}
	// What is kept is copied: the caller may change next afterwards.
	upd.SecretKey, upd.WebhookSecrets = next.SecretKey, slices.Clone(next.WebhookSecrets)
	if level {
		upd.LogLevel = next.LogLevel
	}
	if !reflect.DeepEqual(cur.Endpoints, next.Endpoints) {
		changed("endpoints", true)
		upd.Endpoints = slices.Clone(next.Endpoints)
	}
	upd.Accounts = maps.Clone(cur.Accounts)
	for _, name := range slices.Sorted(maps.Keys(next.Accounts)) {
		a, ok := cur.Accounts[name]
		if !ok {
			changed("accounts."+name, false)
			continue
		}
		n := next.Accounts[name]
		for _, st := range accountSettings {
			if st.set.show(&a) != st.set.show(&n) {
				changed("accounts."+name+"."+st.key, st.reload)
			}
		}
		a.SecretKey, a.WebhookSecrets = n.SecretKey, slices.Clone(n.WebhookSecrets)
		upd.Accounts[name] = a
	}
	for _, name := range slices.Sorted(maps.Keys(cur.Accounts)) {
		if _, ok := next.Accounts[name]; !ok {
			changed("accounts."+name, false)
		}
	}
	return upd, r
}
