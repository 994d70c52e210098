package ordersync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRoleMay(t *testing.T) {
	for _, tc := range []struct {
		role      Role
		read, act bool
	}{
		{RoleOperator, true, true},
		{RoleViewer, true, false},
		{"", false, false},
		{"admin", false, false},
		{"Operator", false, false}, // only ParseRole forgives letter case
	} {
		if got := tc.role.May(AccessRead); got != tc.read {
			t.Errorf("%q.May(read) = %v, want %v", tc.role, got, tc.read)
		}
		if got := tc.role.May(AccessAct); got != tc.act {
			t.Errorf("%q.May(act) = %v, want %v", tc.role, got, tc.act)
		}
	}
}

func TestParseRole(t *testing.T) {
	for in, want := range map[string]Role{"viewer": RoleViewer, "OPERATOR": RoleOperator, " Viewer ": RoleViewer} {
		if got, err := ParseRole(in); err != nil || got != want {
			t.Errorf("ParseRole(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "admin", "read-only"} {
		if _, err := ParseRole(in); err == nil || !strings.Contains(err.Error(), "viewer or operator") {
			t.Errorf("ParseRole(%q): err %v, want one naming viewer or operator", in, err)
		}
	}
}

func TestValidateAdminTokens(t *testing.T) {
	op := func(name, tok string) AdminToken { return AdminToken{Name: name, Role: RoleOperator, Token: tok} }
	for _, tc := range []struct {
		name   string
		tokens []AdminToken
		want   []string // each must be in the error; none: valid
	}{
		{"none", nil, nil},
		{"two roles", []AdminToken{op("ops", "t1"), {Name: "finance", Role: RoleViewer, Token: "t2"}}, nil},
		{"empty token", []AdminToken{op("ops", "")}, []string{"admin_tokens[0]: the token is empty"}},
		{"bad role", []AdminToken{{Name: "x", Role: "admin", Token: "t"}}, []string{`role "admin" is not viewer or operator`}},
		{"bad name", []AdminToken{op("a b", "t")}, []string{`admin_tokens[0]: name "a b"`}},
		{"name twice", []AdminToken{op("ops", "t1"), op("ops", "t2")}, []string{`admin_tokens[1]: name "ops" is also admin_tokens[0]'s`}},
		{"token twice", []AdminToken{op("a", "t"), {Name: "b", Role: RoleViewer, Token: "t"}}, []string{"admin_tokens[1]: the same token as admin_tokens[0]"}},
		{"all at once", []AdminToken{op("", ""), {Name: "", Role: "x", Token: ""}}, []string{"[0]: the token is empty", "[1]: role", `[1]: name "" is also`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateAdminTokens(tc.tokens)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("err %v, want none", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestFirstOperator(t *testing.T) {
	tokens := []AdminToken{{Name: "v", Role: RoleViewer, Token: "a"}, {Name: "o1", Role: RoleOperator, Token: "b"}, {Name: "o2", Role: RoleOperator, Token: "c"}}
	if got, ok := FirstOperator(tokens); !ok || got.Name != "o1" {
		t.Errorf("FirstOperator = %+v, %v; want o1", got, ok)
	}
	if _, ok := FirstOperator(tokens[:1]); ok {
		t.Error("FirstOperator of viewers only found one")
	}
}

func TestTokenIdentity(t *testing.T) {
	a := AdminToken{Name: "ops", Role: RoleOperator, Token: "secret-1"}
	b := a
	b.Name, b.Role = "renamed", RoleViewer
	if a.Identity() != b.Identity() {
		t.Error("the identity depends on more than the token")
	}
	c := a
	c.Token = "secret-2"
	if a.Identity() == c.Identity() {
		t.Error("a new token kept the identity of the old")
	}
	if strings.Contains(a.Identity(), a.Token) || len(a.Identity()) != 64 {
		t.Errorf("identity %q: want 64 hex digits of a hash", a.Identity())
	}
}

func TestAuditOutcomes(t *testing.T) {
	for status, want := range map[int]string{200: "ok", 204: "ok", 403: "403", 500: "500", 303: "ok", 100: "100"} {
		if got := OutcomeOfStatus(status); got != want {
			t.Errorf("OutcomeOfStatus(%d) = %q, want %q", status, got, want)
		}
	}
	if got := OutcomeOfError(nil); got != OutcomeOK {
		t.Errorf("OutcomeOfError(nil) = %q", got)
	}
	if got := OutcomeOfError(errors.New("boom")); got != "boom" {
		t.Errorf("OutcomeOfError = %q", got)
	}
	if got := OutcomeOfError(fmt.Errorf("export: %w", context.Canceled)); got != OutcomeCancelled {
		t.Errorf("OutcomeOfError(cancelled) = %q, want %q", got, OutcomeCancelled)
	}
	if got := OutcomeOfError(errors.New(strings.Repeat("x", 2000))); len(got) != len(Clip(got, 500)) || len(got) > 510 {
		t.Errorf("OutcomeOfError kept %d bytes, want it clipped to 500", len(got))
	}
}

func TestValidateAuditRecord(t *testing.T) {
	ok := AuditRecord{Actor: "ops", Role: RoleOperator, Via: ViaAPI, Action: "endpoint.delete", Object: "endpoint e1", Outcome: OutcomeOK}
	if err := ValidateAuditRecord(ok); err != nil {
		t.Fatalf("valid record refused: %v", err)
	}
	for name, mutate := range map[string]func(*AuditRecord){
		"actor":   func(r *AuditRecord) { r.Actor = "" },
		"action":  func(r *AuditRecord) { r.Action = "" },
		"outcome": func(r *AuditRecord) { r.Outcome = "" },
		"via":     func(r *AuditRecord) { r.Via = "email" },
	} {
		r := ok
		mutate(&r)
		if err := ValidateAuditRecord(r); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("without a good %s: err %v, want one naming it", name, err)
		}
	}
}
