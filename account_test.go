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

// TestValidName: the one rule for the names of accounts, endpoints and
// namespaces, which go into paths, variables, consumer names and subjects.
func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"shop": true, "shop-2_EU": true, strings.Repeat("a", 64): true,
		"": false, strings.Repeat("a", 65): false, "a.b": false, "a b": false, "a/b": false, "café": false, "a*": false, "a>": false,
	} {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, got, want)
		}
	}
}
