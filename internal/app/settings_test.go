package app

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/internal/redact"
)

// TestSettingsAttrRedacts: the start's settings line shows every setting
// and no credential, at the top level, in an account and in an endpoint.
func TestSettingsAttrRedacts(t *testing.T) {
	cfg := DefaultConfig()
	cfg.APIBaseURL = "https://api.example.com"
	cfg.SecretKey = "sk-secret-1"
	cfg.WebhookSecrets = []string{"whk-secret-2", "whk-secret-3"}
	cfg.NATSToken = "nats-secret-4"
	cfg.NATSURL = "nats://user:nats-secret-5@nats.example.com:4222"
	cfg.DatabaseURL = "postgres://ordersync:db-secret-6@db.example.com/ordersync?sslmode=require"
	cfg.AdminTokens = []ordersync.AdminToken{{Name: "ops", Role: ordersync.RoleOperator, Token: "adm-secret-7"},
		{Name: "look", Role: ordersync.RoleViewer, Token: "adm-secret-8"}}
	cfg.Accounts = map[string]AccountConfig{"shop2": {APIBaseURL: "https://api2.example.com", SecretKey: "sk-secret-9", WebhookSecrets: []string{"whk-secret-10"}}}
	cfg.Endpoints = []EndpointConfig{{ID: "erp", URL: "https://erp.example.com/hook", Secret: "whsec_secret-11"}}

	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("settings in effect", cfg.SettingsAttr())
	if m := regexp.MustCompile(`secret-\d+`).FindAllString(buf.String(), -1); len(m) > 0 {
		t.Errorf("the settings line shows credentials %v: %s", m, buf.String())
	}
	var line struct {
		Settings map[string]any `json:"settings"`
	}
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	s := line.Settings
	for key, want := range map[string]any{"secret_key": redact.Mask, "admin_viewer_tokens": redact.Mask, "workers": strconv.Itoa(cfg.Workers),
		"api_base_url": "https://api.example.com", "database_url": "postgres://ordersync:xxxxx@db.example.com/ordersync?sslmode=require"} {
		if s[key] != want {
			t.Errorf("settings.%s = %v, want %v", key, s[key], want)
		}
	}
	for _, st := range settings {
		if _, ok := s[st.key]; !ok && !st.replaced {
			t.Errorf("setting %s is not in the line", st.key)
		}
	}
	shop := s["accounts"].(map[string]any)["shop2"].(map[string]any)
	if shop["api_base_url"] != "https://api2.example.com" || shop["secret_key"] != redact.Mask {
		t.Errorf("account shop2 shown as %v", shop)
	}
	erp := s["endpoints"].(map[string]any)["0"].(map[string]any)
	if erp["id"] != "erp" || erp["secret"] != redact.Mask {
		t.Errorf("endpoint erp shown as %v", erp)
	}
}

// TestSecretSettingsListed: every setting whose key names a credential is
// in secretSettings (a file holding one, *_file, is a path and shown).
func TestSecretSettingsListed(t *testing.T) {
	credential := regexp.MustCompile(`secret|token|password|passwd`)
	notCredential := map[string]bool{"endpoint_secret_grace": true} // a duration
	var keys []string
	for _, st := range settings {
		keys = append(keys, st.key)
	}
	for _, st := range accountSettings {
		keys = append(keys, st.key)
	}
	for _, st := range endpointSettings {
		keys = append(keys, st.key)
	}
	for _, key := range keys {
		if credential.MatchString(key) && !strings.HasSuffix(key, "_file") && !notCredential[key] && !secretSettings[key] {
			t.Errorf("setting %s names a credential and is not in secretSettings: its value would be logged at start", key)
		}
	}
}
