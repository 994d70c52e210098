package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/internal/app"
)

// TestAuditFromTheCLI: a command that acts on the mirror itself records
// the operating-system user; one that asks the admin API records the
// token's name; a viewer's token is refused an action and may read the
// trail with `audit list`.
func TestAuditFromTheCLI(t *testing.T) {
	t.Parallel()
	st := startTestStack(t, app.StackOptions{Seed: 7, Configure: func(c *app.Config) {
		c.AdminTokens = []ordersync.AdminToken{
			{Name: "ops", Role: ordersync.RoleOperator, Token: "ops-secret"},
			{Name: "finance", Role: ordersync.RoleViewer, Token: "fin-secret"},
		}
	}})
	adminURL := "--admin-url=" + st.Program.AdminURL()
	db := "--database-url=" + st.Program.Config().DatabaseURL
	handled := serveHandled(st)
	out, err := runCLI(t, "links", "create", "--amount", "12.50", db, "--api-base-url="+st.SimURL, "--secret-key="+st.SecretKey)
	if err != nil {
		t.Fatalf("links create: %v\n%s", err, out)
	}
	code := strings.Fields(out)[1]
	waitServeHandled(t, st, handled)
	if _, err := runCLI(t, "dlq", "replay", "--all", adminURL, "--token", "ops-secret"); err != nil {
		t.Fatalf("dlq replay as the operator: %v", err)
	}
	if _, err := runCLI(t, "dlq", "replay", "--all", adminURL, "--token", "fin-secret"); err == nil || !strings.Contains(err.Error(), "finance is a viewer") {
		t.Fatalf("dlq replay as a viewer: %v, want refused", err)
	}

	out, err = runCLI(t, "audit", "list", adminURL, "--token", "fin-secret", "--json")
	if err != nil {
		t.Fatalf("audit list: %v\n%s", err, out)
	}
	var page api.AuditList
	if err := json.Unmarshal([]byte(out), &page); err != nil || page.Count != 3 {
		t.Fatalf("audit list --json: %v\n%s", err, out)
	}
	viewer, op, local := page.Records[0], page.Records[1], page.Records[2]
	if viewer.Actor != "finance" || viewer.Outcome != "403" || viewer.Action != "dead-letters.replay" {
		t.Errorf("the viewer's refusal: %+v", viewer)
	}
	if op.Actor != "ops" || op.Role != "operator" || op.Via != "api" || op.Outcome != "ok" {
		t.Errorf("the operator's replay: %+v", op)
	}
	if local.Actor != osUser() || local.Via != "cli" || local.Action != "payment-link.create" || local.Object != "order "+code || local.Outcome != "ok" {
		t.Errorf("the local link creation: %+v (want by %s)", local, osUser())
	}

	out, err = runCLI(t, "audit", "list", adminURL, "--token", "fin-secret", "--actor", "ops", "--limit", "1")
	if err != nil || !strings.Contains(out, "dead-letters.replay") || !strings.Contains(out, "\n1 record\n") || strings.Contains(out, "payment-link") {
		t.Errorf("audit list --actor ops: %v\n%s", err, out)
	}
}
