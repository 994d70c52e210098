package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/quietlog"
)

// FollowerConfig configures a Follower.
type FollowerConfig struct {
	// Accounts routes each account to its Syncer: a link is created
	// through the account's upstream and its order fetched through the
	// account's Syncer; a request for another account fails with
	// ErrUnknownAccount.
	Accounts Accounts
	Mirror   ordersync.Mirror
	Reader   ordersync.MirrorReader
	// OnOrdersKnown is called once an order's keys are recorded, so events
	// that arrived before could not be resolved are replayed.
	OnOrdersKnown func(ctx context.Context, refs []ordersync.OrderRef)
	Logger        *slog.Logger
	Clock         func() time.Time
}

func (c FollowerConfig) withDefaults() FollowerConfig {
	defaultDeps(nil, &c.Logger, &c.Clock)
	return c
}

func (c FollowerConfig) validate() error {
	switch {
	case len(c.Accounts) == 0:
		return errors.New("worker: FollowerConfig.Accounts is required")
	case c.Mirror == nil:
		return errors.New("worker: FollowerConfig.Mirror is required")
	case c.Reader == nil:
		return errors.New("worker: FollowerConfig.Reader is required")
	}
	for name, s := range c.Accounts {
		if s == nil {
			return fmt.Errorf("worker: FollowerConfig.Accounts[%q] is nil", name)
		}
	}
	return nil
}

// Follower implements ordersync.Follower over the upstream and the mirror.
type Follower struct {
	cfg FollowerConfig
	// quiet logs failed first fetches, which repeat per created link
	// through an outage, once and then summed up.
	quiet *quietlog.Log

	// currencies caches each account's store currency, once known, for the
	// check of a link's amounts: a read of the mirror on every link
	// creation would put the recording of the link behind its own first
	// webhook, which the sync lag then pays.
	mu         sync.Mutex
	currencies map[string]string
}

var _ ordersync.Follower = (*Follower)(nil)

// NewFollower returns a Follower.
func NewFollower(cfg FollowerConfig) (*Follower, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Follower{cfg: cfg, quiet: quietlog.New(cfg.Logger, quietlog.DefaultInterval)}, nil
}

// CreatePaymentLink creates the link upstream and records the order at once.
// The first fetch follows right away; if it fails, the order stays recorded
// and the reconciler or its first webhook fills it in.
func (f *Follower) CreatePaymentLink(ctx context.Context, account string, params ordersync.PaymentLinkParams) (*ordersync.PaymentLinkResult, error) {
	syncer, err := f.cfg.Accounts.For(account)
	if err != nil {
		return nil, fmt.Errorf("create payment link: %w", err)
	}
	currency, err := f.storeCurrency(ctx, account)
	if err != nil {
		return nil, err
	}
	if err := params.ValidateFor(ordersync.English, currency); err != nil {
		return nil, err
	}
	res, err := syncer.CreatePaymentLink(ctx, params)
	if err != nil {
		return nil, err
	}
	minutes := ordersync.DefaultExpirationMinutes
	if params.ExpirationMinutes != nil {
		minutes = *params.ExpirationMinutes
	}
	ref := ordersync.OrderRef{
		Account: account, Code: res.OrderCode, ID: res.OrderID, Reference: params.OrderReference,
		ExpiresAt: f.cfg.Clock().Add(time.Duration(minutes) * time.Minute),
	}
	// The link exists upstream now: recording it must not be cut short by
	// a client that hangs up.
	bg := context.WithoutCancel(ctx)
	if err := f.cfg.Mirror.RecordOrderRef(bg, ref); err != nil {
		return res, fmt.Errorf("record created order %s: %w", res.OrderCode, err)
	}
	if f.cfg.OnOrdersKnown != nil {
		f.cfg.OnOrdersKnown(bg, []ordersync.OrderRef{ref})
	}
	if _, err := syncer.SyncOrder(bg, account, res.OrderCode, ordersync.CauseCreate); err != nil {
		f.quiet.Log(slog.LevelWarn, "first fetch", "first fetch of a created order failed; the reconciler will retry", "order_code", res.OrderCode, "err", err)
	}
	return res, nil
}

// storeCurrency is the currency of the account's store as its latest
// mirrored order gives it, or "" before any order is mirrored. Once known
// it is kept for the life of the process: a store does not change its
// currency. Until then every call reads the mirror.
func (f *Follower) storeCurrency(ctx context.Context, account string) (string, error) {
	f.mu.Lock()
	code := f.currencies[account]
	f.mu.Unlock()
	if code != "" {
		return code, nil
	}
	code, err := f.cfg.Reader.StoreCurrency(ctx, account)
	if err != nil || code == "" {
		return "", err
	}
	f.mu.Lock()
	if f.currencies == nil {
		f.currencies = map[string]string{}
	}
	f.currencies[account] = code
	f.mu.Unlock()
	return code, nil
}

// TrackOrder fetches an order created elsewhere, mirrors it and returns it.
func (f *Follower) TrackOrder(ctx context.Context, account, code string) (*ordersync.MirroredOrder, error) {
	syncer, err := f.cfg.Accounts.For(account)
	if err != nil {
		return nil, fmt.Errorf("track order %s: %w", code, err)
	}
	res, err := syncer.SyncOrder(ctx, account, code, ordersync.CauseTrack)
	if err != nil {
		return nil, fmt.Errorf("track order %s: %w", code, err)
	}
	o, err := f.cfg.Reader.FindOrderByCode(ctx, account, code)
	if err != nil {
		return nil, fmt.Errorf("track order %s: %w", code, err)
	}
	if res.Created && f.cfg.OnOrdersKnown != nil {
		f.cfg.OnOrdersKnown(ctx, []ordersync.OrderRef{{Account: account, Code: code, ID: o.Order.OrderID, Reference: o.Order.OrderReference}})
	}
	return o, nil
}
