package webhook

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ordersync/ordersync"
)

// TestSetSecrets: replaced secrets verify the next request, for every
// account at once; a set that names another account, leaves one out or
// holds an empty secret is refused and the secrets in force stay.
func TestSetSecrets(t *testing.T) {
	tq := startQueue(t, t.TempDir(), queueConfig())
	rc, url := startReceiver(t, Config{
		Secrets:   []string{oldSecret},
		Accounts:  map[string]AccountConfig{"shop2": {Secrets: []string{shop2Secret}}},
		Publisher: tq.q,
	})
	body := fixture(t, "webhook-created-captured-shape.json")
	status := func(path, secret string) int {
		t.Helper()
		return post(t, http.MethodPost, url+path, body, Sign(secret, body)).status
	}
	if got := status(Path, newSecret); got != http.StatusUnauthorized {
		t.Fatalf("before the rotation, the new secret: %d", got)
	}

	// The rotation's overlap: old and new both verify.
	if err := rc.SetSecrets(map[string][]string{ordersync.DefaultAccount: {newSecret, oldSecret}, "shop2": {shop2Secret}}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{newSecret, oldSecret} {
		if got := status(Path, s); got != http.StatusOK {
			t.Errorf("during the overlap, secret %s…: %d", s[:4], got)
		}
	}
	// Its end: only the new one.
	if err := rc.SetSecrets(map[string][]string{ordersync.DefaultAccount: {newSecret}, "shop2": {shop2Secret}}); err != nil {
		t.Fatal(err)
	}
	if got := status(Path, oldSecret); got != http.StatusUnauthorized {
		t.Errorf("after the overlap, the old secret: %d", got)
	}

	for _, c := range []struct {
		secrets map[string][]string
		want    string
	}{
		{map[string][]string{ordersync.DefaultAccount: {oldSecret}}, `no secrets given for account "shop2"`},
		{map[string][]string{ordersync.DefaultAccount: {oldSecret}, "shop2": {shop2Secret}, "shop3": {"x"}}, `account "shop3" is not served here`},
		{map[string][]string{ordersync.DefaultAccount: {oldSecret}, "shop2": {" "}}, "is empty"},
		{map[string][]string{ordersync.DefaultAccount: {oldSecret}, "shop2": nil}, "no webhook secret"},
	} {
		if err := rc.SetSecrets(c.secrets); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SetSecrets(%v): %v, want %q", c.secrets, err, c.want)
		}
	}
	if got := status(Path, newSecret); got != http.StatusOK {
		t.Errorf("after refused sets, the secret in force: %d", got)
	}
	if got := status(Path, oldSecret); got != http.StatusUnauthorized {
		t.Errorf("after refused sets, a refused set's secret: %d", got)
	}
	if got := status(Path+"/shop2", shop2Secret); got != http.StatusOK {
		t.Errorf("after refused sets, shop2's secret: %d", got)
	}
}
