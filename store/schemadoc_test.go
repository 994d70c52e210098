package store

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// documentedViews reads docs/schema.md: each "### `name`" heading under
// "## The views" starts a view, and the first cell of each row of its
// table, in backquotes, is a column.
func documentedViews(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open("../docs/schema.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	heading := regexp.MustCompile("^### `([a-z_]+)`$")
	row := regexp.MustCompile("^\\| `([a-z_]+)` \\|")
	views := map[string][]string{}
	inViews, view := false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			inViews, view = line == "## The views", ""
		case !inViews:
		case heading.MatchString(line):
			view = heading.FindStringSubmatch(line)[1]
			views[view] = nil
		case view != "" && row.MatchString(line):
			views[view] = append(views[view], row.FindStringSubmatch(line)[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(views) == 0 {
		t.Fatal("docs/schema.md documents no view")
	}
	return views
}

// TestSchemaDoc: the views docs/schema.md documents are exactly the
// database's views, each with exactly the documented columns, but for the
// store's own views (named internal_…), which are no part of the contract.
func TestSchemaDoc(t *testing.T) {
	docs := documentedViews(t)
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		viewsSQL, columnsSQL := `SELECT name FROM sqlite_schema WHERE type = 'view'`, `SELECT name FROM pragma_table_info(?)`
		if db.dialect == DialectPostgres {
			viewsSQL = `SELECT table_name FROM information_schema.views WHERE table_schema = current_schema()`
			columnsSQL = `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1`
		}
		var views []string
		if err := db.read.Select(&views, viewsSQL); err != nil {
			t.Fatal(err)
		}
		for _, v := range views {
			if _, ok := docs[v]; !ok && !strings.HasPrefix(v, "internal_") {
				t.Errorf("view %s is not in docs/schema.md", v)
			}
		}
		for view, documented := range docs {
			var columns []string
			if err := db.read.Select(&columns, columnsSQL, view); err != nil {
				t.Fatal(err)
			}
			if len(columns) == 0 {
				t.Errorf("docs/schema.md documents %s, which the database does not have", view)
				continue
			}
			for _, c := range documented {
				if !slices.Contains(columns, c) {
					t.Errorf("docs/schema.md documents %s.%s, which the database does not have", view, c)
				}
			}
			for _, c := range columns {
				if !slices.Contains(documented, c) {
					t.Errorf("%s.%s is not in docs/schema.md", view, c)
				}
			}
		}
	})
}
