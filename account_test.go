package ordersync

import (
	"errors"
	"strings"
	"testing"
)

func TestAccountsFor(t *testing.T) {
	a := Accounts[int]{DefaultAccount: 1, "acme": 2}
	if v, err := a.For("acme"); err != nil || v != 2 {
		t.Errorf("For(acme) = %v, %v; want 2", v, err)
	}
	v, err := a.For("ghost")
	if v != 0 || !errors.Is(err, ErrUnknownAccount) || err.Error() != `account "ghost": unknown account` {
		t.Errorf("For(ghost) = %v, %v; want the zero value and an error naming the account", v, err)
	}
	if _, err := Accounts[int](nil).For(DefaultAccount); !errors.Is(err, ErrUnknownAccount) {
		t.Errorf("nil Accounts: %v, want ErrUnknownAccount", err)
	}
	// A requested name may be anything: the error holds a bounded part.
	_, err = a.For(strings.Repeat("x", 10_000))
	if !errors.Is(err, ErrUnknownAccount) || len(err.Error()) > 100 {
		t.Errorf("a long name: %d bytes in the error", len(err.Error()))
	}
}
