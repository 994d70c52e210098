package ordersync

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Role is what a holder of an admin token may do: a viewer reads
// everything, an operator also acts (replays, re-syncs, endpoint changes,
// secret rotation, link creation).
type Role string

// The roles.
const (
	RoleViewer   Role = "viewer"
	RoleOperator Role = "operator"
)

// ParseRole reads a role in any letter case.
func ParseRole(s string) (Role, error) {
	switch r := Role(strings.ToLower(strings.TrimSpace(s))); r {
	case RoleViewer, RoleOperator:
		return r, nil
	}
	return "", fmt.Errorf("role %q is not viewer or operator", s)
}

// Access is what a request does: read, or act on something.
type Access int

// The kinds of access.
const (
	AccessRead Access = iota
	AccessAct
)

// May reports whether the role grants the access. A role not known grants
// nothing, so a mistyped role locks out instead of letting in.
func (r Role) May(a Access) bool {
	switch r {
	case RoleOperator:
		return a == AccessRead || a == AccessAct
	case RoleViewer:
		return a == AccessRead
	}
	return false
}

// AdminToken is one bearer token of the admin API and the console: the
// name the audit trail records instead of the token, and its role.
type AdminToken struct {
	Name  string
	Role  Role
	Token string
}

// Identity is what may be kept of the token where it must not be kept
// (a session row, a log): a hash of the token alone. It changes when the
// token does, so whatever was tied to a token ends when that token is
// replaced or removed.
func (t AdminToken) Identity() string {
	sum := sha256.Sum256([]byte("ordersync admin token\x00" + t.Token))
	return hex.EncodeToString(sum[:])
}

// DefaultTokenName names the i-th (from 0) token configured without a name.
func DefaultTokenName(i int) string { return fmt.Sprintf("token-%d", i+1) }

var tokenName = regexp.MustCompile(`^[A-Za-z0-9._@-]{1,64}$`)

// ValidateAdminTokens refuses tokens that would make the audit trail or
// the roles ambiguous: an empty token, a role not known, a name that is
// not 1-64 of A-Z a-z 0-9 . _ @ -, a name or a token given twice.
func ValidateAdminTokens(tokens []AdminToken) error {
	var errs []error
	names, values := map[string]int{}, map[string]int{}
	for i, t := range tokens {
		at := fmt.Sprintf("admin_tokens[%d]", i)
		if t.Token == "" {
			errs = append(errs, fmt.Errorf("%s: the token is empty", at))
		}
		if _, err := ParseRole(string(t.Role)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at, err))
		}
		if !tokenName.MatchString(t.Name) {
			errs = append(errs, fmt.Errorf("%s: name %q (want 1-64 of A-Z a-z 0-9 . _ @ -)", at, t.Name))
		}
		if j, ok := names[t.Name]; ok {
			errs = append(errs, fmt.Errorf("%s: name %q is also admin_tokens[%d]'s", at, t.Name, j))
		}
		if j, ok := values[t.Token]; ok && t.Token != "" {
			errs = append(errs, fmt.Errorf("%s: the same token as admin_tokens[%d]", at, j))
		}
		names[t.Name], values[t.Token] = i, i
	}
	return errors.Join(errs...)
}

// FirstOperator is the token client commands send: the first with the
// operator role, or false when none has it.
func FirstOperator(tokens []AdminToken) (AdminToken, bool) {
	for _, t := range tokens {
		if t.Role == RoleOperator {
			return t, true
		}
	}
	return AdminToken{}, false
}

// Principal is who a request acts as: a token's name and role, the
// operating-system user of a local command, or "loopback" for the admin
// API without tokens, which answers only on loopback and lets it act.
type Principal struct {
	Name string
	Role Role
}

// Loopback is the principal of every request when no token is configured.
var Loopback = Principal{Name: "loopback", Role: RoleOperator}
