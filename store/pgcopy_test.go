package store

import (
	"net/url"
	"slices"
	"testing"

	"github.com/ordersync/ordersync/internal/testenv"
)

// TestPostgresCopyIsTheTemplate: the schema postgresURL copies has the
// tables, columns, defaults, constraints, indexes, views, functions,
// triggers and goose versions of the template goose migrated, so tests
// on the copy test the migrated schema.
func TestPostgresCopyIsTheTemplate(t *testing.T) {
	t.Parallel()
	tmpl := postgresTemplate(t)
	u, err := url.Parse(postgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	copied := u.Query().Get("search_path")
	want, got := testenv.PostgresCatalog(t, postgresAdmin(t), tmpl), testenv.PostgresCatalog(t, postgresAdmin(t), copied)
	if len(want) < 100 {
		t.Fatalf("the template's catalog has %d entries: too few to be the migrated schema", len(want))
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("the copy lacks %s", w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("the copy has %s, the template does not", g)
		}
	}
}
