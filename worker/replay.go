package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ordersync/ordersync"
)

// ReplayerConfig configures dead-letter replay.
type ReplayerConfig struct {
	DeadLetters ordersync.DeadLetters
	Publisher   ordersync.EventPublisher
	// Accounts, when set, is the deployment's router (the pool's): a dead
	// letter of an account it does not serve is not queued again, where the
	// pool would only dead-letter it anew, and asking for one fails with
	// ErrUnknownAccount. When nil, every account's letters are replayed.
	Accounts Accounts
	Logger   *slog.Logger
	Clock    func() time.Time
}

func (c ReplayerConfig) withDefaults() ReplayerConfig {
	defaultDeps(nil, &c.Logger, &c.Clock)
	return c
}

func (c ReplayerConfig) validate() error {
	switch {
	case c.DeadLetters == nil:
		return errors.New("worker: ReplayerConfig.DeadLetters is required")
	case c.Publisher == nil:
		return errors.New("worker: ReplayerConfig.Publisher is required")
	}
	return nil
}

// Replayer sends dead-lettered events through the normal path again: back
// into the queue, where a worker resolves, fetches and mirrors them as if
// they had just arrived.
type Replayer struct {
	cfg ReplayerConfig
}

var _ ordersync.Replayer = (*Replayer)(nil)

// NewReplayer returns a Replayer.
func NewReplayer(cfg ReplayerConfig) (*Replayer, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Replayer{cfg: cfg}, nil
}

// serves routes account through Accounts: nil when it is served (or every
// account is), ErrUnknownAccount naming it otherwise.
func (r *Replayer) serves(account string) error {
	if r.cfg.Accounts == nil {
		return nil
	}
	_, err := r.cfg.Accounts.For(account)
	return err
}

// ReplayDeadLetter re-queues one dead letter and marks it replayed.
func (r *Replayer) ReplayDeadLetter(ctx context.Context, id int64) error {
	dl, err := r.cfg.DeadLetters.FindDeadLetter(ctx, id)
	if err != nil {
		return fmt.Errorf("replay dead letter %d: %w", id, err)
	}
	if err := r.serves(dl.Account); err != nil {
		return fmt.Errorf("replay dead letter %d: %w", id, err)
	}
	return r.replay(ctx, dl)
}

func (r *Replayer) replay(ctx context.Context, dl *ordersync.DeadLetter) error {
	now := r.cfg.Clock()
	ev := &ordersync.InboundEvent{
		// A fresh MsgID per replay: the original one may still be inside
		// the queue's deduplication window.
		MsgID:      fmt.Sprintf("replay:%d:%d", dl.ID, dl.ReplayCount+1),
		Account:    dl.Account,
		Body:       dl.Body,
		ReceivedAt: now,
		// Only events that passed the receiver's checks are ever queued,
		// and so ever dead-lettered.
		Signature: ordersync.SignatureValid,
		ReplayOf:  dl.ID,
		Cause:     ordersync.CauseReplay,
	}
	if _, err := r.cfg.Publisher.PublishEvent(ctx, ev); err != nil {
		return fmt.Errorf("replay dead letter %d: publish: %w", dl.ID, err)
	}
	if err := r.cfg.DeadLetters.MarkDeadLetterReplayed(ctx, dl.ID, now); err != nil {
		return fmt.Errorf("replay dead letter %d: mark replayed: %w", dl.ID, err)
	}
	r.cfg.Logger.Info("dead letter replayed", "id", dl.ID, "reason", dl.Reason, "order_id", dl.OrderID)
	return nil
}

// ReplayDeadLetters replays every unreplayed letter the filter selects. A
// filter naming an account not served fails with ErrUnknownAccount; without
// an account, the letters of accounts not served are left as they are.
func (r *Replayer) ReplayDeadLetters(ctx context.Context, filter ordersync.DeadLetterFilter) (int, error) {
	if filter.Account != "" {
		if err := r.serves(filter.Account); err != nil {
			return 0, fmt.Errorf("replay dead letters: %w", err)
		}
	}
	filter.IncludeReplayed = false
	dls, err := r.cfg.DeadLetters.ListDeadLetters(ctx, filter)
	if err != nil {
		return 0, fmt.Errorf("replay dead letters: %w", err)
	}
	n, skipped := 0, 0
	defer func() {
		if skipped > 0 {
			r.cfg.Logger.Warn("dead letters of accounts not served left unreplayed", "letters", skipped)
		}
	}()
	for _, dl := range dls {
		if r.serves(dl.Account) != nil {
			skipped++
			continue
		}
		if err := r.replay(ctx, dl); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// ReplayUnresolved replays the events dead-lettered as unresolved whose keys
// match one of refs, now that the mirror knows those orders. The pool calls
// it for every order it mirrors for the first time, so the usual case, no
// unresolved letters pending, costs one query per account per call, not one
// per order.
func (r *Replayer) ReplayUnresolved(ctx context.Context, refs ...ordersync.OrderRef) (int, error) {
	pending := map[string]bool{} // account → has unresolved letters pending
	n := 0
	for _, ref := range refs {
		if (ref.ID == "" && ref.Reference == "") || r.serves(ref.Account) != nil {
			continue
		}
		has, checked := pending[ref.Account]
		if !checked {
			letters, err := r.cfg.DeadLetters.ListDeadLetters(ctx, ordersync.DeadLetterFilter{
				Account: ref.Account, Reason: ordersync.ReasonUnresolved, Limit: 1,
			})
			if err != nil {
				return n, fmt.Errorf("replay unresolved events: %w", err)
			}
			has = len(letters) > 0
			pending[ref.Account] = has
		}
		if !has {
			continue
		}
		for _, f := range []ordersync.DeadLetterFilter{
			{Account: ref.Account, Reason: ordersync.ReasonUnresolved, OrderID: ref.ID},
			{Account: ref.Account, Reason: ordersync.ReasonUnresolved, OrderReference: ref.Reference},
		} {
			if f.OrderID == "" && f.OrderReference == "" {
				continue
			}
			m, err := r.ReplayDeadLetters(ctx, f)
			n += m
			if err != nil {
				return n, err
			}
		}
	}
	return n, nil
}
