package redact

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestURL: no credential a database or NATS URL can carry reaches the
// startup log; what is not a credential stays readable.
func TestURL(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"postgres user and password", "postgres://app:s3cr3t@db.example:5432/orders?sslmode=require", "postgres://app:xxxxx@db.example:5432/orders?sslmode=require"},
		{"postgres password with an @", "postgres://app:p@ss@db.example/orders", "postgres://app:xxxxx@db.example/orders"},
		{"postgres password percent-encoded", "postgresql://app:p%40ss%2F@db.example/orders", "postgresql://app:xxxxx@db.example/orders"},
		{"postgres password in the query", "postgres://app@db.example/orders?password=s3cr3t&sslmode=disable", "postgres://app@db.example/orders?password=xxxxx&sslmode=disable"},
		{"postgres TLS key password and key", "postgres://app@db/orders?sslmode=verify-full&sslpassword=s3cr3t&sslkey=/etc/keys/s3cr3t.key&sslcert=/etc/client.crt", "postgres://app@db/orders?sslmode=verify-full&sslpassword=xxxxx&sslkey=xxxxx&sslcert=/etc/client.crt"},
		{"postgres upper-case parameter", "postgres://db/orders?PASSWORD=s3cr3t", "postgres://db/orders?PASSWORD=xxxxx"},
		{"postgres multi-host", "postgres://app:s3cr3t@db1:5432,db2:5432/orders", "postgres://app:xxxxx@db1:5432,db2:5432/orders"},
		{"postgres user alone is kept", "postgres://app@db.example/orders", "postgres://app@db.example/orders"},
		{"postgres without credentials", "postgres://db.example/orders?sslmode=disable", "postgres://db.example/orders?sslmode=disable"},
		{"libpq key=value", "host=db.example user=app password=s3cr3t dbname=orders", "host=db.example user=app password=xxxxx dbname=orders"},
		{"libpq key=value quoted", "host=db.example password='s3 cr\\'3t' sslmode=require", "host=db.example password=xxxxx sslmode=require"},
		{"libpq key = value", "password = s3cr3t host=db", "password = xxxxx host=db"},
		{"nats token", "nats://s3cr3t@127.0.0.1:4222", "nats://xxxxx@127.0.0.1:4222"},
		{"nats user and password", "nats://ordersync:s3cr3t@nats.example:4222", "nats://ordersync:xxxxx@nats.example:4222"},
		{"tls token", "tls://s3cr3t@nats.example:4222", "tls://xxxxx@nats.example:4222"},
		{"nats server list", "nats://u:s3cr3t@n1:4222,nats://s3cr3t@n2:4222, tls://n3:4222", "nats://u:xxxxx@n1:4222,nats://xxxxx@n2:4222, tls://n3:4222"},
		{"nats without credentials", "nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"sqlite path", "data/ordersync.db", "data/ordersync.db"},
		{"sqlite with auth", "file:data/m.db?_auth=&_auth_user=admin&_auth_pass=s3cr3t&_busy_timeout=5000", "file:data/m.db?_auth=&_auth_user=admin&_auth_pass=xxxxx&_busy_timeout=5000"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := URL(tt.in)
			if got != tt.want {
				t.Errorf("URL(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if strings.Contains(got, "s3cr3t") || strings.Contains(got, "p@ss") || strings.Contains(got, "p%40ss") {
				t.Errorf("URL(%q) = %q still holds the secret", tt.in, got)
			}
		})
	}
}

// FuzzURL: whatever a password or token is, in any of the places a
// database or NATS URL carries one, it does not reach the log. Characters
// a URL or DSN must escape in that place are left out.
func FuzzURL(f *testing.F) {
	for _, s := range []string{"s3cr3t", "p%40ss", "xxxxx1", "ÄÖÜ-ß", "a:b"} {
		f.Add(s)
	}
	forms := []string{
		"postgres://app:%s@db.example:5432/orders?sslmode=require",
		"postgres://app@db.example/orders?password=%s&sslmode=disable",
		"postgres://app@db.example/orders?sslmode=verify-full&sslpassword=%s",
		"nats://%s@127.0.0.1:4222",
		"nats://ordersync:%s@127.0.0.1:4222,nats://127.0.0.1:4223",
		"host=db.example user=app password=%s dbname=orders",
		"host=db.example password='%s' dbname=orders",
		"file:data/m.db?_auth_user=admin&_auth_pass=%s",
	}
	f.Fuzz(func(t *testing.T, secret string) {
		if len(secret) < 4 || strings.ContainsAny(secret, "/?#@,&;'\\= \t\r\n\v\f\u0085\u00a0") || !utf8.ValidString(secret) {
			return
		}
		for _, form := range forms {
			if strings.HasPrefix(form, "nats://%s@") && strings.Contains(secret, ":") {
				continue // user:password, whose user is not a secret
			}
			in := fmt.Sprintf(form, secret)
			if strings.Contains(fmt.Sprintf(form, Mask), secret) {
				continue // the secret is part of the rest of the URL
			}
			if got := URL(in); strings.Contains(got, secret) {
				t.Errorf("URL(%q) = %q keeps the secret", in, got)
			}
		}
	})
}
