package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/internal/app"
)

func newServeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the webhook receiver, workers, outbox relay, reconciler and admin API",
		Long: `serve runs the whole pipeline in one process. Settings come from a YAML
file (--config), then ORDERSYNC_* environment variables, then flags.
Required: the API base URL, the secret key and a webhook secret.
With no NATS URL, NATS runs embedded under the data directory; with no
database URL, the mirror is SQLite in the data directory.
SIGINT/SIGTERM drain: /readyz answers 503 for shutdown_drain while the
listeners keep serving, then stop accepting webhooks, finish and ack
in-flight work, publish the outbox, close.
SIGHUP reloads: the file, the environment and the flags are read again,
and the admin tokens, the webhook secrets, the secret keys, the file's
endpoints and log_level take effect; an invalid configuration is refused
and the settings in force are kept; other changed settings are logged as
needing a restart.`,
		Args: cobra.NoArgs,
	}
	flags := app.AddConfigFlags(cmd.Flags(), app.ScopeAll)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		// SIGHUP reloads from now on rather than ending the process; one
		// that arrives before the program runs waits for it.
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		limitServeMemory()
		cfg, err := flags.Load(os.Getenv)
		if err != nil {
			return err
		}
		level := new(slog.LevelVar)
		logger, err := newLogger(cmd.ErrOrStderr(), level, cfg.LogLevel, cfg.LogFormat)
		if err != nil {
			return err
		}
		// The checks that serve's own start does not make (the service's
		// key, the webhook secrets) run beside it, so that a refused key
		// is logged at once without holding webhooks back.
		var checks sync.WaitGroup
		defer checks.Wait()
		checks.Go(func() { logChecks(logger.With("component", "check"), runChecks(cmd.Context(), cfg, checkStart)) })
		p, err := app.NewProgram(cmd.Context(), cfg, logger)
		if err != nil {
			return err
		}
		defer p.Close()
		if p.SQLite() {
			spareProcForSQLite()
		}
		p.SetLogLevelVar(level)
		ctx, stop := context.WithCancel(cmd.Context())
		defer stop()
		var reloads sync.WaitGroup
		reloads.Go(func() { reloadOnHangup(ctx, hup, flags, p, logger) })
		err = p.Run(ctx)
		stop()
		reloads.Wait()
		return err
	}
	return cmd
}

// reloadOnHangup reloads the configuration on each SIGHUP until ctx ends.
// The program logs and counts each outcome, a configuration that does not
// load included.
func reloadOnHangup(ctx context.Context, hup <-chan os.Signal, flags *app.ConfigFlags, p *app.Program, logger *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		logger.Info("SIGHUP: reloading the configuration")
		next, err := flags.Load(os.Getenv)
		if err != nil {
			p.ReloadRefused(err)
			continue
		}
		_, _ = p.Reload(ctx, next) // it logs its outcome
	}
}

// newLogger is a logger at level, which it sets to the log_level given.
func newLogger(w io.Writer, level *slog.LevelVar, logLevel, format string) (*slog.Logger, error) {
	lv, err := app.ParseLogLevel(logLevel)
	if err != nil {
		return nil, err
	}
	level.Set(lv)
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(format) {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		opts.ReplaceAttr = secondsAttr
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("bad setting: log_format %q (want text or json)", format)
}

// secondsAttr writes a duration as seconds, a number, where the JSON
// handler would write integer nanoseconds: what log stores and people
// read as a duration.
func secondsAttr(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.Float64Value(a.Value.Duration().Seconds())
	}
	return a
}
