package main

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/testenv"
	"github.com/ordersync/ordersync/sim"
)

// runCLI runs one ordersync command line in-process and returns its output.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := execute(ctx, cmd)
	return out.String(), err
}

// serveHandled is how many webhook events the stack's serve has settled
// with an order request or, when the mirror already held a fetch sent
// after their receipt, without one.
func serveHandled(st *app.Stack) float64 {
	n := 0.0
	for _, name := range []string{"ordersync_fetch_requests_total", "ordersync_worker_events_already_fetched_total"} {
		for _, m := range family(st.Program.Registry(), name) {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}

// waitServeHandled waits until the stack's serve has settled the webhook
// a link created through the CLI causes: by a fetch, or without one when
// the CLI's own fetch left after serve received it (which happens first
// is a race). A stack stopped before it waits the worker drain's whole
// timeout for it.
func waitServeHandled(t *testing.T, st *app.Stack, before float64) {
	t.Helper()
	testenv.WaitFor(t, 15*time.Second, "serve's handling of the webhook of the link the CLI created", func() bool { return serveHandled(st) > before })
}

// TestCLI runs the back-office commands beside a running service, on its
// database, as an operator would.
func TestCLI(t *testing.T) {
	t.Parallel()
	st := startTestStack(t, app.StackOptions{Seed: 5})
	codes, err := createDemoOrders(context.Background(), st.Program.AdminURL(), ordersync.DefaultAccount, 5, rand.New(rand.NewPCG(5, 5)))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range codes[:2] {
		if _, err := st.Sim.Pay(c, ordersync.Buyer{Name: "Ana", Phone: "+50373657811"}); err != nil {
			t.Fatal(err)
		}
	}
	waitMirrorMatches(t, st, 10*time.Second)
	db := "--database-url=" + st.Program.Config().DatabaseURL
	up := []string{db, "--api-base-url=" + st.SimURL, "--secret-key=" + st.SecretKey}

	out, err := runCLI(t, "orders", "list", db)
	if err != nil || !strings.Contains(out, "5 orders") || !strings.Contains(out, "CODE") {
		t.Fatalf("orders list: %v\n%s", err, out)
	}
	for _, c := range codes {
		if !strings.Contains(out, c) {
			t.Errorf("orders list lacks %s", c)
		}
	}
	if out, err = runCLI(t, "orders", "list", db, "--status", "paid", "--json", "--count"); err != nil || !strings.Contains(out, `"count": 2`) || !strings.Contains(out, `"total": 2`) {
		t.Errorf("orders list --status paid --json: %v\n%s", err, out)
	}
	// Several statuses, comma-separated or repeated; pages that say where
	// they are and what comes next, and totals that are totals.
	for _, args := range [][]string{{"--status", "paid,pending"}, {"--status", "PAID", "--status", "pending"}} {
		if out, err = runCLI(t, append([]string{"orders", "list", db}, args...)...); err != nil || !strings.Contains(out, "5 orders") {
			t.Errorf("orders list %v: %v\n%s", args, err, out)
		}
	}
	if out, err = runCLI(t, "orders", "list", db, "--limit", "2", "--offset", "2", "--count"); err != nil || !strings.Contains(out, "orders 3–4 of 5 (next page: --offset 4)") {
		t.Errorf("orders list --limit 2 --offset 2: %v\n%s", err, out)
	}
	if out, err = runCLI(t, "orders", "list", db, "--limit", "2", "--offset", "4", "--json", "--count"); err != nil ||
		!strings.Contains(out, `"count": 1`) || !strings.Contains(out, `"total": 5`) || !strings.Contains(out, `"offset": 4`) || !strings.Contains(out, `"limit": 2`) {
		t.Errorf("orders list --limit 2 --offset 4 --json: %v\n%s", err, out)
	}
	if out, err = runCLI(t, "orders", "list", db, "--limit", "1", "--offset", "4"); err != nil || !strings.Contains(out, "\norder 5 of 5\n") {
		t.Errorf("orders list, the last page: %v\n%s", err, out)
	}
	if _, err = runCLI(t, "orders", "list", db, "--status", "SHIPPED"); err == nil {
		t.Error("an unknown status was accepted")
	}
	// Search by a buyer's name regardless of case; a listing by cursor.
	if out, err = runCLI(t, "orders", "list", db, "--search", "ANA", "--json"); err != nil || !strings.Contains(out, `"count": 2`) {
		t.Errorf("orders list --search ANA: %v\n%s", err, out)
	}
	// And by the buyer's phone as a caller says it, without the country code.
	if out, err = runCLI(t, "orders", "list", db, "--search", "7365-7811", "--json"); err != nil || !strings.Contains(out, `"count": 2`) {
		t.Errorf("orders list --search 7365-7811: %v\n%s", err, out)
	}
	first, err := runCLI(t, "orders", "list", db, "--limit", "3", "--sort", "created_asc")
	_, next, found := strings.Cut(first, "(next page: --cursor ")
	if err != nil || !found || !strings.Contains(first, "orders 1–3") {
		t.Fatalf("orders list --limit 3 --sort created_asc: %v\n%s", err, first)
	}
	next = strings.TrimSuffix(strings.TrimSpace(next), ")")
	if out, err = runCLI(t, "orders", "list", db, "--limit", "3", "--sort", "created_asc", "--cursor", next); err != nil || !strings.Contains(out, "2 orders after the cursor\n") {
		t.Errorf("orders list --cursor: %v\n%s", err, out)
	}
	seen := map[string]int{}
	for _, line := range strings.Split(first+out, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			seen[f[0]]++
		}
	}
	for _, c := range codes {
		if seen[c] != 1 {
			t.Errorf("order %s on %d of the two pages:\n%s\n%s", c, seen[c], first, out)
		}
	}
	for _, args := range [][]string{{"--tz", "Nowhere/Else", "--created-from", "2026-01-01"}, {"--sort", "price"}, {"--min-total", "ten"}} {
		_, err := runCLI(t, append([]string{"orders", "list", db}, args...)...)
		if err == nil || !strings.Contains(err.Error(), args[0]+":") {
			t.Errorf("orders list %v: %v, want an error naming %s", args, err, args[0])
		}
	}
	if out, err = runCLI(t, "orders", "show", codes[0], db); err != nil || !strings.Contains(out, "PAID") || !strings.Contains(out, "Fetches") {
		t.Errorf("orders show: %v\n%s", err, out)
	}
	if out, err = runCLI(t, "orders", "show", codes[0], db, "--json"); err != nil || !strings.Contains(out, `"sync"`) {
		t.Errorf("orders show --json: %v\n%s", err, out)
	}
	if _, err = runCLI(t, "orders", "show", "NOPE", db); err == nil {
		t.Error("showing an unknown order succeeded")
	}
	// The event log, for an order in the mirror and for one it does not hold.
	if out, err = runCLI(t, "orders", "events", "--order-code", codes[0], db); err != nil ||
		!strings.Contains(out, "SuccessPayment") || !strings.Contains(out, "synced") || !strings.Contains(out, "valid") {
		t.Errorf("orders events --order-code: %v\n%s", err, out)
	}
	unheld := ordersync.EventRecord{MsgID: "cli-unheld", Account: ordersync.DefaultAccount, ReceivedAt: time.Now(), Type: ordersync.EventCreated,
		OrderID: "98765", Signature: ordersync.SignatureValid, Outcome: ordersync.OutcomeDeadLettered, Detail: "unresolved"}
	if err := st.Program.DB().RecordEvents(context.Background(), []ordersync.EventRecord{unheld}); err != nil {
		t.Fatal(err)
	}
	if out, err = runCLI(t, "orders", "events", "--order-id", "98765", db); err != nil || !strings.Contains(out, "dead_lettered") || !strings.Contains(out, "\n1 event\n") {
		t.Errorf("orders events --order-id of an order the mirror lacks: %v\n%s", err, out)
	}
	if out, err = runCLI(t, "orders", "events", "--order-id", "98765", db, "--json"); err != nil || !strings.Contains(out, `"msgId": "cli-unheld"`) {
		t.Errorf("orders events --json: %v\n%s", err, out)
	}

	// links create records and fetches the order at once.
	handled := serveHandled(st)
	out, err = runCLI(t, append([]string{"links", "create", "--item", "name=Combo,price=6.50,qty=2", "--item", "sku=PUPUSA-REVUELTA,qty=4", "--reference", "cli-1"}, up...)...)
	if err != nil || !strings.Contains(out, "created and recorded") {
		t.Fatalf("links create: %v\n%s", err, out)
	}
	waitServeHandled(t, st, handled)
	code := strings.Fields(out)[1]
	if out, err = runCLI(t, "orders", "show", code, db); err != nil || !strings.Contains(out, "PENDING") || !strings.Contains(out, "Combo") {
		t.Errorf("created link not mirrored: %v\n%s", err, out)
	}
	// Refusals name the flags the user typed, never the API's fields.
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--item", "name=Combo,qty=2"}, "--item 1 price: The field is required."},
		{[]string{"--item", "sku=PUPUSA-REVUELTA", "--item", "name=Combo,price=0,qty=0"}, "--item 2 price: The value must be greater than 0.\n  --item 2 qty: The quantity must be at least 1."},
		{[]string{"--item", "colour=red"}, `--item "colour=red": unknown key "colour"`},
		{[]string{"--item", "sku=X,name=Combo,price=1"}, "give sku=… (a portal product) or name=…,price=… (a one-time product), not both"},
		{[]string{"--amount", "10", "--item", "sku=X"}, "give one or more --item (Method 1) or --amount (Method 2), not both and not neither"},
		{nil, "give one or more --item (Method 1) or --amount (Method 2), not both and not neither"},
		{[]string{"--amount", "ten"}, "--amount:"},
		{[]string{"--amount", "-1"}, "--amount: The value must be greater than 0."},
		// The mirror holds the store's orders, so its currency is known.
		{[]string{"--amount", "10.999"}, "--amount: The amount has more decimal places than USD allows (2)."},
		{[]string{"--item", "name=Combo,price=6.505"}, "--item 1 price: The amount has more decimal places than USD allows (2)."},
		{[]string{"--amount", "5", "--success-url", "nowhere"}, "--success-url: The value must be an absolute http or https URL."},
		{[]string{"--amount", "5", "--metadata", "novalue"}, `--metadata "novalue": want name=value`},
		{[]string{"--amount", "5", "--metadata", "=v"}, "--metadata 1: The field is required."},
	} {
		_, err := runCLI(t, append(append([]string{"links", "create"}, bad.args...), up...)...)
		if err == nil || !strings.Contains(err.Error(), bad.want) || strings.Contains(err.Error(), "lineItems") {
			t.Errorf("links create %v: %v, want an error saying %q", bad.args, err, bad.want)
		}
	}
	// The upstream's refusal of the secret key names the setting to fix.
	wrongKey := []string{db, "--api-base-url=" + st.SimURL, "--secret-key=wrong"}
	_, err = runCLI(t, append([]string{"links", "create", "--amount", "5"}, wrongKey...)...)
	if want := "the payment link service refused the secret key (HTTP 401): check secret_key (ORDERSYNC_SECRET_KEY or --secret-key), or accounts.NAME.secret_key (ORDERSYNC_ACCOUNT_NAME_SECRET_KEY) for another account"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("links create with a wrong secret key: %v, want %q", err, want)
	}

	// An order created elsewhere is tracked by its code.
	if err := st.Sim.SetFaults(sim.Faults{DropRate: 1}); err != nil {
		t.Fatal(err)
	}
	amount := ordersync.MustAmount("9.99")
	res, err := st.Sim.CreatePaymentLink(ordersync.PaymentLinkParams{Amount: &amount})
	if err != nil {
		t.Fatal(err)
	}
	if out, err = runCLI(t, append([]string{"orders", "track", res.OrderCode}, up...)...); err != nil || !strings.Contains(out, res.OrderCode) || !strings.Contains(out, "1 order tracked") {
		t.Errorf("orders track: %v\n%s", err, out)
	}
	if out, err = runCLI(t, append([]string{"orders", "track", res.OrderCode, "--json"}, up...)...); err != nil ||
		!strings.Contains(out, `"orderCode": "`+res.OrderCode+`"`) || !strings.Contains(out, `"count": 1`) {
		t.Errorf("orders track --json: %v\n%s", err, out)
	}
	if _, err = runCLI(t, append([]string{"orders", "track", "ZZZZZZZ"}, up...)...); err == nil {
		t.Error("tracking an unknown code succeeded")
	}

	// A reconcile pass finds the payment the mirror missed: every webhook
	// of this order is dropped (set before its creation, or its Created
	// webhook, retried while unresolved, would fetch the payment first).
	if _, err := st.Sim.Pay(res.OrderCode, ordersync.Buyer{Name: "Luis"}); err != nil {
		t.Fatal(err)
	}
	out, err = runCLI(t, append([]string{"reconcile"}, up...)...)
	if err != nil || !strings.Contains(out, res.OrderCode+"\tPENDING → PAID") || !strings.Contains(out, "1 changed") {
		t.Errorf("reconcile: %v\n%s", err, out)
	}
	if strings.Contains(out, "\r") || strings.Contains(out, "reconciling:") {
		t.Errorf("reconcile showed progress on output that is not a terminal:\n%q", out)
	}
	if out, err = runCLI(t, append([]string{"reconcile", "--json"}, up...)...); err != nil ||
		!strings.Contains(out, `"changed": []`) || !strings.Contains(out, `"failed": 0`) || !strings.Contains(out, `"checked": `) {
		t.Errorf("reconcile --json (nothing left to change): %v\n%s", err, out)
	}

	if out, err = runCLI(t, "dlq", "list", db); err != nil || !strings.Contains(out, "0 dead letters") {
		t.Errorf("dlq list: %v\n%s", err, out)
	}
	if _, err = runCLI(t, "dlq", "replay", "1", "--admin-url", st.Program.AdminURL()); err == nil || !strings.Contains(err.Error(), "no dead letter 1") {
		t.Errorf("dlq replay of an unknown letter: %v", err)
	}
	// A reason no dead letter can have is refused, not a silent "0 replayed".
	const wantReason = `--reason: unknown dead letter reason "bogus" (want unknown_order, unresolved, malformed, retries_exhausted, rejected)`
	if _, err = runCLI(t, "dlq", "replay", "--all", "--reason", "bogus", "--admin-url", st.Program.AdminURL()); err == nil || err.Error() != wantReason {
		t.Errorf("dlq replay --reason bogus: %v, want %q", err, wantReason)
	}
	if _, err = runCLI(t, "dlq", "list", "--reason", "bogus", db); err == nil || err.Error() != wantReason {
		t.Errorf("dlq list --reason bogus: %v, want %q", err, wantReason)
	}
	if out, err = runCLI(t, "dlq", "replay", "--all", "--reason", "Unresolved", "--admin-url", st.Program.AdminURL()); err != nil || !strings.Contains(out, "0 dead letters replayed") {
		t.Errorf("dlq replay --reason Unresolved: %v\n%s", err, out)
	}
	// dlq show: a table by default, the API's JSON with --json.
	dlID, err := st.Program.DB().AddDeadLetter(context.Background(), ordersync.DeadLetter{MsgID: "cli-dl", Account: ordersync.DefaultAccount,
		Reason: ordersync.ReasonMalformed, Attempts: 1, LastError: "not JSON", OrderID: "4321", Body: []byte(`{"orderId":"4321"`), CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatInt(dlID, 10)
	if out, err = runCLI(t, "dlq", "show", id, db); err != nil || !strings.Contains(out, "Reason           malformed") ||
		!strings.Contains(out, "Order id         4321") || !strings.Contains(out, "The event as received:\n{\"orderId\":\"4321\"") {
		t.Errorf("dlq show: %v\n%s", err, out)
	}
	if out, err = runCLI(t, "dlq", "show", id, db, "--json"); err != nil || !strings.Contains(out, `"reason": "malformed"`) || !strings.Contains(out, `"orderId": 4321`) {
		t.Errorf("dlq show --json: %v\n%s", err, out)
	}
	if out, err = runCLI(t, "migrate", db); err != nil || !strings.Contains(out, "up to date") {
		t.Errorf("migrate: %v\n%s", err, out)
	}
	// migrate, like serve, creates a data directory that is not there yet.
	fresh := filepath.Join(t.TempDir(), "not", "yet")
	if out, err = runCLI(t, "migrate", "--data-dir", fresh); err != nil || !strings.Contains(out, "up to date") {
		t.Errorf("migrate into a missing directory: %v\n%s", err, out)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("migrate left the data directory %v (%v), want it created 0700", fi, err)
	}
	// Every missing setting at once, each with where to set it.
	_, err = runCLI(t, "serve", "--data-dir", t.TempDir())
	for _, want := range []string{"3 problems in the configuration:",
		"missing setting: api_base_url (ORDERSYNC_API_BASE_URL or --api-base-url)",
		"missing setting: secret_key (ORDERSYNC_SECRET_KEY or --secret-key)",
		"missing setting: webhook_secrets (ORDERSYNC_WEBHOOK_SECRET or --webhook-secret)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("serve without settings: %v, want it to say %q", err, want)
		}
	}
}

// TestDLQReplayToken: replay asks the running service, with its admin token.
func TestDLQReplayToken(t *testing.T) {
	st := startTestStack(t, app.StackOptions{Configure: func(c *app.Config) {
		c.AdminTokens = []ordersync.AdminToken{{Name: "ops", Role: ordersync.RoleOperator, Token: "s3cret"}}
	}})
	admin := "--admin-url=" + st.Program.AdminURL()
	if _, err := runCLI(t, "dlq", "replay", "--all", admin); err == nil || !strings.Contains(err.Error(), "bearer token") {
		t.Fatalf("replay without the token: %v", err)
	}
	out, err := runCLI(t, "dlq", "replay", "--all", admin, "--token", "s3cret")
	if err != nil || !strings.Contains(out, "0 dead letters replayed") {
		t.Fatalf("replay with the token: %v\n%s", err, out)
	}
	// On the host of a running serve, replay finds the admin API and its
	// token where serve does, with nothing typed: the environment...
	listen := strings.TrimPrefix(st.Program.AdminURL(), "http://")
	t.Setenv("ORDERSYNC_ADMIN_TOKEN", "s3cret,next")
	t.Setenv("ORDERSYNC_ADMIN_LISTEN", listen)
	if _, err := runCLI(t, "dlq", "replay", "--all"); err != nil {
		t.Fatalf("replay with the admin API and token from the environment: %v", err)
	}
	// ...or the config file.
	t.Setenv("ORDERSYNC_ADMIN_TOKEN", "")
	t.Setenv("ORDERSYNC_ADMIN_LISTEN", "")
	file := filepath.Join(t.TempDir(), "ordersync.yaml")
	if err := os.WriteFile(file, []byte("admin_listen: "+listen+"\nadmin_tokens: [s3cret]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runCLI(t, "dlq", "replay", "--all", "--config", file); err != nil {
		t.Fatalf("replay with the admin API and token from the config file: %v", err)
	}
	// The token a client sends and the tokens serve accepts have distinct flags.
	for cmd, want := range map[string][2]string{"serve": {"--admin-tokens strings", "--token "}, "dlq replay": {"--token string", "--admin-tokens"}} {
		help, _ := runCLI(t, append(strings.Fields(cmd), "--help")...)
		if !strings.Contains(help, want[0]) || strings.Contains(help, want[1]) {
			t.Errorf("%s --help: want %q and no %q:\n%s", cmd, want[0], want[1], help)
		}
	}
}
