package ordersync

import (
	"errors"
	"fmt"
	"regexp"
)

// ErrUnknownAccount is an event or request for an account this deployment
// does not serve: a permanent failure. Test it with errors.Is.
var ErrUnknownAccount = errors.New("unknown account")

// validName is what names an account, an endpoint or a namespace: it goes
// into URL paths, environment variables, JetStream consumer names and NATS
// subjects as it is.
var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// NameRule is ValidName's rule in the words of an error message.
const NameRule = "1-64 of A-Z a-z 0-9 _ -"

// ValidName reports whether s may name an account, an endpoint or a
// namespace (NameRule).
func ValidName(s string) bool { return validName.MatchString(s) }

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
