package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/datadir"
	"github.com/ordersync/ordersync/internal/redact"
)

// checkTimeout bounds each check that waits on something outside.
const checkTimeout = 10 * time.Second

// probeOrderCode is an order code no order can have (codes are letters
// and digits): the service answers it with 404 once the key is accepted.
const probeOrderCode = "ordersync-check"

// checkResult is one line of `ordersync check`.
type checkResult struct {
	name   string
	status checkStatus
	detail string
	fix    string // what to do, when not ok
}

type checkStatus string

const (
	checkOK   checkStatus = "ok"
	checkWarn checkStatus = "warn"
	checkFail checkStatus = "FAIL"
)

func newCheckCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Test the configuration as serve would read it: database, NATS, the service's key, webhook secrets, listeners",
		Long: `check reads the configuration as serve does and tests each part: the
database is reachable and writable with its schema at this build's version,
NATS answers (the embedded server starts on its store), the payment link
service accepts the secret key, the webhook secrets are well-formed, and the
listeners' addresses are free. It prints one line per check, with what to do
about each failure, and exits non-zero when one fails. serve runs the same
checks at start and logs them. Run it before serve, not beside it: a running
serve holds its addresses and data directory.`,
		Args: cobra.NoArgs,
	}
	flags := app.AddConfigFlags(cmd.Flags(), app.ScopeAll)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := flags.Load(os.Getenv)
		if err != nil {
			return err
		}
		results := runChecks(cmd.Context(), cfg, checkAll)
		printChecks(cmd.OutOrStdout(), results)
		if n := countFailed(results); n > 0 {
			return fmt.Errorf("%d of %d checks failed", n, len(results))
		}
		return nil
	}
	return cmd
}

// checkSet selects the checks to run: serve leaves out those its own
// start does anyway (the database, NATS, the listeners).
type checkSet uint8

const (
	checkStart checkSet = iota // serve: configuration, upstream, webhook secrets
	checkAll
)

// runChecks tests each part of cfg, in the order serve starts them.
func runChecks(ctx context.Context, cfg app.Config, set checkSet) []checkResult {
	var out []checkResult
	if err := cfg.ValidateServe(); err != nil {
		out = append(out, checkResult{"configuration", checkFail, err.Error(), "set the missing or wrong settings in the config file, the environment or flags"})
	} else {
		out = append(out, checkResult{"configuration", checkOK, "every setting serve needs is there", ""})
	}
	if set == checkAll {
		out = append(out, checkDatabase(ctx, cfg), checkNATS(ctx, cfg))
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range cfg.Upstreams() {
			if !yield(name) {
				return
			}
		}
	})
	for _, name := range names {
		out = append(out, checkUpstream(ctx, cfg, name), checkWebhookSecrets(cfg, name))
	}
	if set == checkAll {
		out = append(out, checkListeners(cfg))
	}
	return out
}

func checkDatabase(ctx context.Context, cfg app.Config) checkResult {
	r := checkResult{name: "database"}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	where := redact.URL(cfg.DatabaseURL)
	if !strings.Contains(cfg.DatabaseURL, "://") {
		// SQLite: serve creates the data directory; so does check, owner-only.
		if err := os.MkdirAll(filepath.Dir(cfg.DatabaseURL), 0o700); err != nil {
			r.status, r.detail = checkFail, fmt.Sprintf("cannot create the directory of %s: %v", where, err)
			r.fix = "make data_dir (or the directory of database_url) a directory this user can write"
			return r
		}
	}
	l, err := app.OpenLocal(ctx, cfg, app.LocalOptions{KeepSchema: true})
	if err != nil {
		r.status, r.detail = checkFail, fmt.Sprintf("cannot open %s: %v", where, err)
		r.fix = "check database_url (ORDERSYNC_DATABASE_URL): the server is up, the user and password are right, and the file's directory is writable"
		return r
	}
	defer l.Close()
	db := l.DB()
	if err := db.CheckWrite(ctx); err != nil {
		r.status, r.detail = checkFail, fmt.Sprintf("%s is not writable: %v", where, err)
		r.fix = "give the database user the right to write (SQLite: the file and its directory)"
		return r
	}
	current, latest, err := db.SchemaVersion(ctx)
	switch {
	case err != nil:
		r.status, r.detail, r.fix = checkFail, fmt.Sprintf("cannot read the schema version of %s: %v", where, err), "run ordersync migrate"
	case current > latest:
		r.status, r.detail = checkFail, fmt.Sprintf("%s is at schema version %d, newer than this build's %d", where, current, latest)
		r.fix = "run the ordersync release that migrated it, or a newer one"
	case current < latest && !cfg.MigrateOnStart:
		r.status, r.detail = checkFail, fmt.Sprintf("%s is at schema version %d of %d and migrate_on_start is off", where, current, latest)
		r.fix = "run ordersync migrate"
	case current < latest:
		r.status, r.detail = checkOK, fmt.Sprintf("%s: writable, schema at version %d; serve migrates it to %d at start", where, current, latest)
	default:
		r.status, r.detail = checkOK, fmt.Sprintf("%s: writable, schema at version %d, this build's", where, current)
	}
	return r
}

func checkNATS(ctx context.Context, cfg app.Config) checkResult {
	r := checkResult{name: "nats"}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	if cfg.NATSURL != "" {
		if err := app.CheckQueue(ctx, cfg, "ordersync check"); err != nil {
			r.status, r.detail = checkFail, fmt.Sprintf("%s: %v", redact.URL(cfg.NATSURL), err)
			r.fix = "check nats_url and its credentials (nats_creds_file, nats_token, nats_nkey_file), and that JetStream is enabled on the server"
			return r
		}
		r.status, r.detail = checkOK, fmt.Sprintf("%s answers, with JetStream", redact.URL(cfg.NATSURL))
		return r
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		r.status, r.detail, r.fix = checkFail, fmt.Sprintf("cannot create data_dir %s: %v", cfg.DataDir, err), "make data_dir a directory this user can write"
		return r
	}
	unlock, err := datadir.Lock(cfg.DataDir)
	var locked *datadir.LockedError
	if errors.As(err, &locked) {
		r.status, r.detail = checkFail, err.Error()
		r.fix = "check runs before serve: stop the running one first, or point check at another data_dir"
		return r
	}
	if err != nil {
		r.status, r.detail, r.fix = checkFail, err.Error(), "make data_dir a directory this user can write"
		return r
	}
	defer unlock()
	storeDir := datadir.JetStreamDir(cfg.DataDir)
	if err := app.CheckQueue(ctx, cfg, "ordersync check"); err != nil {
		r.status, r.detail = checkFail, fmt.Sprintf("the embedded server does not start on %s: %v", storeDir, err)
		r.fix = "check that the data directory is writable and jetstream_sync is default, always or an interval"
		return r
	}
	r.status, r.detail = checkOK, fmt.Sprintf("embedded, JetStream store %s", storeDir)
	if cfg.NATSPort != 0 {
		r.detail += fmt.Sprintf(", port %d with the password in %s", cfg.NATSPort, datadir.NATSPasswordFile(cfg.DataDir))
	}
	return r
}

func checkUpstream(ctx context.Context, cfg app.Config, account string) checkResult {
	a := cfg.Upstreams()[account]
	r := checkResult{name: "upstream"}
	if account != ordersync.DefaultAccount {
		r.name += " " + account
	}
	names := app.AccountSettings(account)
	if a.APIBaseURL == "" || a.SecretKey == "" || app.CheckBaseURL(a.APIBaseURL) != nil {
		r.status, r.detail, r.fix = checkFail, "not tested: the service's URL or key is missing or wrong", "see the configuration check above"
		return r
	}
	cfg.UpstreamTimeout = min(cfg.UpstreamTimeout, checkTimeout)
	client, err := app.NewUpstreamClient(cfg, account)
	if err != nil {
		r.status, r.detail, r.fix = checkFail, err.Error(), "check "+names.APIBaseURL
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	_, err = client.GetOrder(ctx, probeOrderCode)
	var ue *ordersync.UpstreamError
	switch {
	case err == nil, errors.As(err, &ue) && (ue.Kind == ordersync.UpstreamNotFound || ue.Kind == ordersync.UpstreamValidation):
		r.status, r.detail = checkOK, fmt.Sprintf("%s accepts the secret key (an order code that cannot exist is not found)", a.APIBaseURL)
	case errors.As(err, &ue) && ue.Kind == ordersync.UpstreamUnauthorized:
		r.status, r.detail = checkFail, fmt.Sprintf("%s refused the secret key (HTTP %d)", a.APIBaseURL, ue.StatusCode)
		r.fix = "set " + names.SecretKey + " to the secret key of the merchant portal"
	case errors.As(err, &ue) && (ue.Kind == ordersync.UpstreamTransport || ue.Kind == ordersync.UpstreamServer || ue.Kind == ordersync.UpstreamRateLimited):
		r.status, r.detail = checkFail, fmt.Sprintf("%s does not answer: %v", a.APIBaseURL, err)
		r.fix = "check " + names.APIBaseURL + " and that this host reaches it; webhooks are still received and queued while it is down"
	default:
		r.status, r.detail = checkFail, fmt.Sprintf("%s: %v", a.APIBaseURL, err)
		r.fix = "check " + names.APIBaseURL + ": it should be the service's base URL, without /paymentlink"
	}
	return r
}

// checkWebhookSecrets holds the secrets to the portal's form: 44
// characters, base64 of 32 bytes. Another form verifies signatures all the
// same (the simulator's does), so it warns rather than fails.
func checkWebhookSecrets(cfg app.Config, account string) checkResult {
	r := checkResult{name: "webhook secrets"}
	if account != ordersync.DefaultAccount {
		r.name += " " + account
	}
	setting := app.AccountSettings(account).WebhookSecrets
	secrets := cfg.Upstreams()[account].WebhookSecrets
	if len(secrets) == 0 {
		if cfg.InsecureNoWebhookSignature {
			r.status, r.detail = checkWarn, "none: insecure_no_webhook_signature accepts unsigned webhooks from anyone"
			r.fix = "set " + setting + " to the secret of the merchant portal"
			return r
		}
		r.status, r.detail, r.fix = checkFail, "none set", "set "+setting+" to the secret of the merchant portal"
		return r
	}
	var odd []string
	for i, s := range secrets {
		if strings.TrimSpace(s) != s || s == "" {
			r.status, r.detail = checkFail, fmt.Sprintf("secret %d of %d has spaces around it or is empty", i+1, len(secrets))
			r.fix = "copy the secret again from the merchant portal into " + setting
			return r
		}
		if b, err := base64.StdEncoding.DecodeString(s); err != nil || len(b) != 32 {
			odd = append(odd, fmt.Sprintf("secret %d is %d characters", i+1, len(s)))
		}
	}
	if len(odd) > 0 {
		r.status, r.detail = checkWarn, strings.Join(odd, ", ")+", not the portal's 44 (base64 of 32 bytes)"
		r.fix = "fine for the simulator; for the service, copy the secret from the merchant portal into " + setting
		return r
	}
	r.status, r.detail = checkOK, fmt.Sprintf("%d in the portal's form", len(secrets))
	return r
}

func checkListeners(cfg app.Config) checkResult {
	r := checkResult{name: "listeners"}
	addrs := []struct{ setting, addr string }{{"listen", cfg.Listen}, {"admin_listen", cfg.AdminListen}}
	if cfg.NATSURL == "" && cfg.NATSPort != 0 {
		addrs = append(addrs, struct{ setting, addr string }{"nats_port", fmt.Sprintf("127.0.0.1:%d", cfg.NATSPort)})
	}
	var free []string
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a.addr)
		if err != nil {
			r.status, r.detail = checkFail, fmt.Sprintf("%s %s: %v", a.setting, a.addr, err)
			r.fix = fmt.Sprintf("stop what listens on %s, or set %s to a free address", a.addr, a.setting)
			return r
		}
		ln.Close()
		free = append(free, a.addr)
	}
	r.status, r.detail = checkOK, strings.Join(free, ", ")+" free"
	return r
}

func printChecks(w io.Writer, results []checkResult) {
	for _, r := range results {
		fmt.Fprintf(w, "%-4s  %-16s %s\n", r.status, r.name, strings.ReplaceAll(r.detail, "\n", "\n                       "))
		if r.status != checkOK && r.fix != "" {
			fmt.Fprintf(w, "      %-16s fix: %s\n", "", r.fix)
		}
	}
}

func countFailed(results []checkResult) int {
	n := 0
	for _, r := range results {
		if r.status == checkFail {
			n++
		}
	}
	return n
}

// logChecks logs serve's checks at start: each failure as an error, with
// its fix, so that a refused key is seen at once and not only in metrics.
func logChecks(logger *slog.Logger, results []checkResult) {
	for _, r := range results {
		switch r.status {
		case checkOK:
			logger.Info("check: "+r.name, "result", r.detail)
		case checkWarn:
			logger.Warn("check: "+r.name, "result", r.detail, "fix", r.fix)
		default:
			logger.Error("check: "+r.name, "result", r.detail, "fix", r.fix)
		}
	}
}
