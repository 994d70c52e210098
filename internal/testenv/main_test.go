package testenv

import (
	"os"
	"testing"

	"github.com/ordersync/ordersync/internal/leak"
)

func TestMain(m *testing.M) { leak.Main(m) }

// postgresBase is the PostgreSQL server's URL the tests of PostgreSQL
// helpers use, skipping the test when it is unset.
func postgresBase(t *testing.T) string {
	t.Helper()
	base := os.Getenv("ORDERSYNC_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("set ORDERSYNC_TEST_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	return base
}
