package ordersync

import (
	"strings"
	"testing"
)

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
