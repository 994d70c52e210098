package app

import (
	"strings"
	"testing"

	"github.com/ordersync/ordersync"
)

// TestAdminTokenSettings: plain tokens are operators named token-N, file
// entries may name a role, and each environment variable replaces the
// tokens of its own role only.
func TestAdminTokenSettings(t *testing.T) {
	op := func(name, tok string) ordersync.AdminToken {
		return ordersync.AdminToken{Name: name, Role: ordersync.RoleOperator, Token: tok}
	}
	vw := func(name, tok string) ordersync.AdminToken {
		return ordersync.AdminToken{Name: name, Role: ordersync.RoleViewer, Token: tok}
	}
	mixed := "admin_tokens:\n  - plain1\n  - {name: finance, role: viewer, token: v1}\n  - name: ops\n    role: Operator\n    token: o1\n"
	for _, tc := range []struct {
		name string
		file string
		env  map[string]string
		args []string
		want []ordersync.AdminToken
	}{
		{"one plain token in the file", "admin_tokens: abc\n", nil, nil, []ordersync.AdminToken{op("token-1", "abc")}},
		{"plain list", "admin_tokens: [a, b]\n", nil, nil, []ordersync.AdminToken{op("token-1", "a"), op("token-2", "b")}},
		{"entries with roles", mixed, nil, nil, []ordersync.AdminToken{op("token-1", "plain1"), vw("finance", "v1"), op("ops", "o1")}},
		{"environment operators replace the file's, keep its viewers", mixed,
			map[string]string{"ORDERSYNC_ADMIN_TOKEN": "e1,e2"}, nil,
			[]ordersync.AdminToken{vw("finance", "v1"), op("token-1", "e1"), op("token-2", "e2")}},
		{"environment viewers replace the file's, keep its operators", mixed,
			map[string]string{"ORDERSYNC_ADMIN_VIEWER_TOKEN": "w1"}, nil,
			[]ordersync.AdminToken{op("token-1", "plain1"), op("ops", "o1"), vw("viewer-1", "w1")}},
		{"both variables", "", map[string]string{"ORDERSYNC_ADMIN_TOKEN": "o", "ORDERSYNC_ADMIN_VIEWER_TOKEN": "v"}, nil,
			[]ordersync.AdminToken{op("token-1", "o"), vw("viewer-1", "v")}},
		{"flags", "", nil, []string{"--admin-viewer-tokens", "v", "--admin-tokens", "o"},
			[]ordersync.AdminToken{op("token-1", "o"), vw("viewer-1", "v")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadTestConfig(t, tc.file, tc.env, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.AdminTokens) != len(tc.want) {
				t.Fatalf("tokens %+v, want %+v", cfg.AdminTokens, tc.want)
			}
			for i := range tc.want {
				if cfg.AdminTokens[i] != tc.want[i] {
					t.Errorf("token %d = %+v, want %+v", i, cfg.AdminTokens[i], tc.want[i])
				}
			}
		})
	}
}

// TestAdminTokenErrors: a bad entry is named by its line, a bad set of
// tokens by ValidateServe.
func TestAdminTokenErrors(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"admin_tokens:\n  - {name: x, role: admin, token: t}\n", `line 2: admin_tokens: entry 1 (line 2): role "admin" is not viewer or operator`},
		{"admin_tokens:\n  - {name: x, token: t, scope: all}\n", `"scope" is not a token setting (want name, role, token)`},
		{"admin_tokens:\n  - [a, b]\n", "entry 1 (line 2): want a token or {name, role, token}"},
	} {
		if _, err := loadTestConfig(t, tc.file, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.file, err, tc.want)
		}
	}
	full := map[string]string{"ORDERSYNC_API_BASE_URL": "http://x", "ORDERSYNC_SECRET_KEY": "k", "ORDERSYNC_WEBHOOK_SECRET": "s"}
	cfg, err := loadTestConfig(t, "admin_tokens:\n  - {name: ops, token: a}\n  - {name: ops, role: viewer, token: b}\n", full)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.ValidateServe(); err == nil || !strings.Contains(err.Error(), `admin_tokens: admin_tokens[1]: name "ops" is also admin_tokens[0]'s`) {
		t.Errorf("two tokens named ops: %v", err)
	}
	cfg.AdminTokens = nil
	cfg.AuditRetention = -1
	if err := cfg.ValidateServe(); err == nil || !strings.Contains(err.Error(), "audit_retention must not be negative") {
		t.Errorf("negative audit retention: %v", err)
	}
}
