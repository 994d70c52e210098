package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/redact"
)

// local is what the one-shot commands work with: internal/app's Local
// (the mirror, and for those that talk upstream, the account's Syncer and
// follower), with the audit of what the command did.
type local struct{ *app.Local }

func openMirror(ctx context.Context, flags *app.ConfigFlags) (*local, error) {
	cfg, err := flags.Load(os.Getenv)
	if err != nil {
		return nil, err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	l, err := app.OpenLocal(ctx, cfg, app.LocalOptions{Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", redact.URL(cfg.DatabaseURL), err)
	}
	return &local{l}, nil
}

// chooseStore reads --account against the stores the configuration
// serves (api.ChooseStore); all says whether the command covers every
// store at once (--account '*').
func (l *local) chooseStore(account string, all bool) (api.StoreChoice, error) {
	choice, err := api.ChooseStore(account, ordersync.DefaultAccount, l.storeNames(), all)
	var ve *ordersync.ValidationError
	if errors.As(err, &ve) {
		return choice, errors.New("--account: " + strings.Join(ve.Fields["account"], "; "))
	}
	return choice, err
}

// storeNames are the stores the configuration serves.
func (l *local) storeNames() []string {
	cfg := l.Config()
	return cfg.StoreNames()
}

// openUpstream opens the mirror and the account's service.
func openUpstream(ctx context.Context, flags *app.ConfigFlags, account string) (*local, error) {
	l, err := openMirror(ctx, flags)
	if err != nil {
		return nil, err
	}
	if err := l.OpenUpstream(account); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// audit records in the audit trail an action this command took itself,
// not through the admin API, as the operating-system user who ran it. A
// trail that cannot be written is said on stderr, not the command's
// failure: the action has happened.
func (l *local) audit(ctx context.Context, action, object string, err error) {
	rec := ordersync.AuditRecord{Actor: osUser(), Via: ordersync.ViaCLI, Action: action, Object: object, Outcome: ordersync.OutcomeOfError(err)}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if aerr := l.DB().RecordAudit(ctx, rec); aerr != nil {
		fmt.Fprintf(os.Stderr, "ordersync: the audit trail did not record %s: %v\n", action, aerr)
	}
}

// osUser names who runs this process: the user's login name, or its id
// where the system cannot name it.
func osUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "uid " + strconv.Itoa(os.Getuid())
}
