package app

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ordersync/ordersync"
)

// TestSecretFiles: every secret setting also comes from a file named by its
// _file variant, in the file, the environment or a flag; the file's
// contents are trimmed, a list's file holds one entry a line; the file is
// read at every load; a setting given both ways, a missing file and an
// empty one are refused naming the setting.
func TestSecretFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	key := write("key", "  sk-from-file\n")
	hooks := write("hooks", "whsec-new\nwhsec-old\n")
	accountKey := write("account-key", "sk-account\n")
	endpointFile := write("endpoint", endpointSecret+"\n")
	viewers := write("viewers", "viewer-token-aaaaaaaaaaaaaaaaaaaa\n")
	natsToken := write("nats", "nats-token\n")
	file := "api_base_url: https://api.example\n" +
		"secret_key_file: " + key + "\n" +
		"nats_token_file: " + natsToken + "\n" +
		"accounts:\n  shop-2:\n    api_base_url: https://api.example\n    secret_key: in-the-file\n    webhook_secrets: [w]\n" +
		"endpoints:\n  - url: https://erp.example/hook\n    secret_file: " + endpointFile + "\n"
	env := map[string]string{
		"ORDERSYNC_WEBHOOK_SECRET_FILE":            hooks,
		"ORDERSYNC_ACCOUNT_SHOP_2_SECRET_KEY_FILE": accountKey,
	}
	cfg, err := loadTestConfig(t, file, env, "--admin-viewer-tokens-file", viewers)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SecretKey != "sk-from-file" || cfg.NATSToken != "nats-token" {
		t.Errorf("secret_key_file, nats_token_file: %q, %q", cfg.SecretKey, cfg.NATSToken)
	}
	if !slices.Equal(cfg.WebhookSecrets, []string{"whsec-new", "whsec-old"}) {
		t.Errorf("ORDERSYNC_WEBHOOK_SECRET_FILE: %q", cfg.WebhookSecrets)
	}
	if got := cfg.Accounts["shop-2"].SecretKey; got != "sk-account" {
		t.Errorf("ORDERSYNC_ACCOUNT_SHOP_2_SECRET_KEY_FILE: %q (the environment overrides the file's secret_key)", got)
	}
	if len(cfg.Endpoints) != 1 || cfg.Endpoints[0].Secret != endpointSecret {
		t.Errorf("endpoints[0].secret_file: %+v", cfg.Endpoints)
	}
	if len(cfg.AdminTokens) != 1 || cfg.AdminTokens[0].Token != "viewer-token-aaaaaaaaaaaaaaaaaaaa" || cfg.AdminTokens[0].Role != ordersync.RoleViewer {
		t.Errorf("--admin-viewer-tokens-file: %+v", cfg.AdminTokens)
	}

	// Read again at every load: a rotated file is the new value.
	write("key", "sk-rotated")
	if cfg, err = loadTestConfig(t, file, env); err != nil || cfg.SecretKey != "sk-rotated" {
		t.Errorf("after the file changed: %q, %v", cfg.SecretKey, err)
	}

	empty := write("empty", " \n")
	for _, c := range []struct {
		file string
		env  map[string]string
		args []string
		want string
	}{
		{file: "secret_key: a\nsecret_key_file: " + key + "\n", want: "line 2: secret_key_file: give secret_key or secret_key_file, not both"},
		{file: "accounts:\n  shop-2:\n    webhook_secrets_file: " + hooks + "\n    webhook_secrets: [a]\n",
			want: "line 4: accounts.shop-2.webhook_secrets: give accounts.shop-2.webhook_secrets or accounts.shop-2.webhook_secrets_file, not both"},
		{env: map[string]string{"ORDERSYNC_NATS_TOKEN": "t", "ORDERSYNC_NATS_TOKEN_FILE": natsToken},
			want: "environment variables ORDERSYNC_NATS_TOKEN and ORDERSYNC_NATS_TOKEN_FILE: set one of them"},
		{args: []string{"--secret-key", "a", "--secret-key-file", key}, want: "--secret-key and --secret-key-file: give one of them"},
		{env: map[string]string{"ORDERSYNC_ADMIN_TOKEN_FILE": filepath.Join(dir, "absent")},
			want: "environment variable ORDERSYNC_ADMIN_TOKEN_FILE: read the secret's file: open " + filepath.Join(dir, "absent")},
		{file: "endpoints:\n  - url: https://erp.example/hook\n    secret_file: " + empty + "\n", want: "endpoints[0].secret_file: the secret's file " + empty + " is empty"},
	} {
		_, err := loadTestConfig(t, c.file, c.env, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q %v %v: %v, want %q", c.file, c.env, c.args, err, c.want)
		}
	}
}

// TestSecretFilesDocumented: the README's table and the example config
// name the _file variant of every secret setting.
func TestSecretFilesDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join("..", "..", "configs", "ordersync.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, st := range settings {
		if st.secret {
			keys = append(keys, st.fileKey())
		}
	}
	for _, st := range accountSettings {
		if st.secret {
			keys = append(keys, "accounts.NAME."+st.fileKey())
		}
	}
	for _, st := range endpointSettings {
		if st.secret {
			keys = append(keys, "endpoints[]."+st.fileKey())
		}
	}
	for _, k := range keys {
		if !strings.Contains(string(doc), k) {
			t.Errorf("docs/configuration.md's table does not name %s", k)
		}
	}
	if !strings.Contains(string(example), "_file") || !strings.Contains(string(example), "_FILE") {
		t.Error("the example config does not say that secrets can come from files")
	}
}
