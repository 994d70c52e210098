package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ConnConfig configures a connection to an external NATS server or cluster.
type ConnConfig struct {
	// URL is one or more comma-separated server URLs. Required.
	URL string
	// Name identifies the connection in the server's monitoring.
	Name string
	// At most one of CredsFile, Token and NKeyFile authenticates.
	CredsFile string
	Token     string
	NKeyFile  string
	// TLSCA verifies the server; TLSCert and TLSKey are the client
	// certificate, both or neither.
	TLSCA   string
	TLSCert string
	TLSKey  string
	// ReconnectWait is the pause between reconnect attempts; default 1s.
	ReconnectWait time.Duration
	Logger        *slog.Logger
}

func (c *ConnConfig) withDefaults() {
	if c.Name == "" {
		c.Name = "ordersync"
	}
	if c.ReconnectWait == 0 {
		c.ReconnectWait = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *ConnConfig) validate() error {
	if c.URL == "" {
		return errors.New("NATS connection: URL is required")
	}
	n := 0
	for _, s := range []string{c.CredsFile, c.Token, c.NKeyFile} {
		if s != "" {
			n++
		}
	}
	if n > 1 {
		return errors.New("NATS connection: set at most one of CredsFile, Token and NKeyFile")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("NATS connection: TLSCert and TLSKey go together")
	}
	if c.ReconnectWait < 0 {
		return fmt.Errorf("NATS connection: ReconnectWait %s must not be negative", c.ReconnectWait)
	}
	return nil
}

// Connect connects to an external NATS server. The first connection must
// succeed before ctx ends; after that the connection reconnects forever,
// logging every disconnect and reconnect (publishes fail or time out while
// it is down, so the receiver answers 503 and the provider retries).
func Connect(ctx context.Context, cfg ConnConfig) (*nats.Conn, error) {
	cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("connect to NATS: %w", err)
	}
	logger := cfg.Logger.With("conn", cfg.Name)
	opts := []nats.Option{
		nats.Name(cfg.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(cfg.ReconnectWait),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			logger.Warn("NATS disconnected", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			logger.Info("NATS reconnected", "server", nc.ConnectedUrlRedacted())
		}),
		nats.ClosedHandler(func(nc *nats.Conn) {
			logger.Info("NATS connection closed")
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			logger.Warn("NATS asynchronous error", "err", err)
		}),
	}
	if deadline, ok := ctx.Deadline(); ok {
		opts = append(opts, nats.Timeout(time.Until(deadline)))
	}
	switch {
	case cfg.CredsFile != "":
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	case cfg.Token != "":
		opts = append(opts, nats.Token(cfg.Token))
	case cfg.NKeyFile != "":
		opt, err := nats.NkeyOptionFromSeed(cfg.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("connect to NATS: read NKeyFile: %w", err)
		}
		opts = append(opts, opt)
	}
	if cfg.TLSCA != "" {
		opts = append(opts, nats.RootCAs(cfg.TLSCA))
	}
	if cfg.TLSCert != "" {
		opts = append(opts, nats.ClientCert(cfg.TLSCert, cfg.TLSKey))
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS: %w", err)
	}
	if err := CheckServerVersion(nc); err != nil {
		nc.Close()
		return nil, fmt.Errorf("connect to NATS at %s: %w", nc.ConnectedUrlRedacted(), err)
	}
	logger.Info("NATS connected", "server", nc.ConnectedUrlRedacted(), "version", nc.ConnectedServerVersion())
	return nc, nil
}

// CheckJetStream asks the server for the account's JetStream information:
// it fails when the server answers without JetStream enabled.
func CheckJetStream(ctx context.Context, nc *nats.Conn) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	if _, err := js.AccountInfo(ctx); err != nil {
		return fmt.Errorf("jetstream account info: %w", err)
	}
	return nil
}
