package ordersync

import (
	"errors"
	"fmt"
)

// ErrUnknownAccount is an event or request for an account this deployment
// does not serve: a permanent failure. Test it with errors.Is.
var ErrUnknownAccount = errors.New("unknown account")

// maxAccountName bounds an account name in an error: a configured name is
// at most 64 bytes, a requested one may be anything.
const maxAccountName = 64

// Accounts routes each merchant account this deployment serves to what
// serves it: its webhook secrets, its syncer (and through it its upstream
// client). It is the one way a stage picks the per-account thing, so an
// account it does not serve fails the same way on every path: with the
// error of For.
type Accounts[T any] map[string]T

// For returns what serves account, or an error that names the account and
// wraps ErrUnknownAccount.
func (a Accounts[T]) For(account string) (T, error) {
	if v, ok := a[account]; ok {
		return v, nil
	}
	var zero T
	return zero, fmt.Errorf("account %q: %w", Clip(account, maxAccountName), ErrUnknownAccount)
}

// DefaultAccount is the account of a single-merchant deployment.
const DefaultAccount = "default"
