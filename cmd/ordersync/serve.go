package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

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
in-flight work, publish the outbox, close.`,
		Args: cobra.NoArgs,
	}
	flags := app.AddConfigFlags(cmd.Flags(), app.ScopeAll)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		limitServeMemory()
		cfg, err := flags.Load(os.Getenv)
		if err != nil {
			return err
		}
		logger, err := newLogger(cmd.ErrOrStderr(), cfg.LogLevel, cfg.LogFormat)
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
		return p.Run(cmd.Context())
	}
	return cmd
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("bad setting: log_level %q (want debug, info, warn or error)", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("bad setting: log_format %q (want text or json)", format)
}
