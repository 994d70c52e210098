package ordersync

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The dependency rule lives in one place, the imports column of
// docs/architecture.md's table; this test reads it there so the doc and
// the code cannot drift apart.
const architectureDoc = "docs/architecture.md"

// TestArchitectureImports fails when a package imports a package of this
// module that its row in docs/architecture.md does not name, when the row
// names one it does not import, or when a package has no row.
func TestArchitectureImports(t *testing.T) {
	doc, err := os.ReadFile(architectureDoc)
	if err != nil {
		t.Fatal(err)
	}
	allowed, err := parseArchitectureTable(doc)
	if err != nil {
		t.Fatal(err)
	}
	imports, err := moduleImports()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range checkArchitecture(allowed, imports) {
		t.Error(v)
	}
}

// TestCheckArchitectureFindsForbiddenImport shows the check above catches
// the mistake it is for: the receiver importing the store.
func TestCheckArchitectureFindsForbiddenImport(t *testing.T) {
	doc := []byte("| package | owns | imports (of this module) |\n|---|---|---|\n" +
		"| `ordersync` (root) | the domain | nothing |\n" +
		"| `store` | the mirror | root |\n" +
		"| `webhook` | the receiver | root, `metrics` |\n" +
		"| `metrics` | the registry | root |\n")
	allowed, err := parseArchitectureTable(doc)
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string][]string{
		"":        nil,
		"store":   {""},
		"metrics": {""},
		"webhook": {"", "metrics", "store"},
	}
	got := checkArchitecture(allowed, imports)
	want := []string{"webhook imports store, which docs/architecture.md does not allow"}
	if !slices.Equal(got, want) {
		t.Fatalf("violations = %q, want %q", got, want)
	}
	imports["webhook"] = []string{"", "metrics"}
	imports["queue"] = []string{""}
	got = checkArchitecture(allowed, imports)
	want = []string{"queue has no row in docs/architecture.md's table"}
	if !slices.Equal(got, want) {
		t.Fatalf("violations = %q, want %q", got, want)
	}
}

// TestOperatorBinaryWiresThroughApp holds the rule docs/architecture.md
// states beside its table: internal/app is the one place that builds the
// stages, and cmd/ordersync gets them from there (Program, Local, Stack),
// so it imports none of the packages they are built from. Its row could
// otherwise gain one of them in the same commit as the import.
func TestOperatorBinaryWiresThroughApp(t *testing.T) {
	imports, err := moduleImports()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range wiresOutsideApp(imports) {
		t.Error(v)
	}
}

// TestAdaptersImportNoOtherAdapter holds the rule in bold at the top of
// docs/architecture.md: an adapter that does I/O imports no other, neither
// directly nor through a support package under internal/ (batch, proxy,
// retryafter, …), so a stage's wiring stays in internal/app. A row could
// otherwise allow it.
func TestAdaptersImportNoOtherAdapter(t *testing.T) {
	imports, err := moduleImports()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range adapterReach(imports) {
		t.Error(v)
	}
}

// ioAdapters are the adapters that do I/O, which import no other.
var ioAdapters = []string{"admin", "dispatch", "paymentlink", "queue", "sim", "store", "webhook", "worker"}

// adapterReach says which adapters that do I/O import another, or import
// an internal/ package that imports one.
func adapterReach(imports map[string][]string) []string {
	var v []string
	for _, a := range ioAdapters {
		for _, d := range imports[a] {
			if slices.Contains(ioAdapters, d) {
				v = append(v, fmt.Sprintf("%s imports the adapter %s: adapters import the domain and support packages only (%s)", a, d, architectureDoc))
			}
			if !strings.HasPrefix(d, "internal/") {
				continue
			}
			for _, dd := range imports[d] {
				if slices.Contains(ioAdapters, dd) {
					v = append(v, fmt.Sprintf("%s imports %s, which imports the adapter %s: %s allows support packages only", a, d, dd, architectureDoc))
				}
			}
		}
	}
	sort.Strings(v)
	return v
}

func TestAdapterReachFound(t *testing.T) {
	got := adapterReach(map[string][]string{
		"webhook":        {"", "internal/proxy", "queue"},
		"worker":         {"", "internal/retryafter"},
		"dispatch":       {"", "delivery"},
		"internal/proxy": {"store"},
		"queue":          {""},
		"store":          {""},
	})
	want := []string{
		"webhook imports internal/proxy, which imports the adapter store: docs/architecture.md allows support packages only",
		"webhook imports the adapter queue: adapters import the domain and support packages only (docs/architecture.md)",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("violations = %q, want %q", got, want)
	}
}

// stagePackages are what internal/app builds the stages from.
var stagePackages = []string{"dispatch", "paymentlink", "queue", "store", "webhook", "worker"}

// wiresOutsideApp says which stage packages cmd/ordersync imports.
func wiresOutsideApp(imports map[string][]string) []string {
	var v []string
	for _, d := range imports["cmd/ordersync"] {
		if slices.Contains(stagePackages, d) {
			v = append(v, fmt.Sprintf("cmd/ordersync imports %s: build it in internal/app and use it from there (%s)", d, architectureDoc))
		}
	}
	return v
}

func TestWiresOutsideAppFindsStageImport(t *testing.T) {
	got := wiresOutsideApp(map[string][]string{
		"cmd/ordersync": {"", "internal/app", "worker"},
		"internal/app":  {"", "store", "worker"},
	})
	want := []string{"cmd/ordersync imports worker: build it in internal/app and use it from there (docs/architecture.md)"}
	if !slices.Equal(got, want) {
		t.Fatalf("violations = %q, want %q", got, want)
	}
}

// TestAdminSurfacesImportNotTheirComposer holds the rule beside the table
// for the back office: admin composes the API (admin/api) and the console
// (admin/console), the console takes the API's actions and error table,
// and neither reaches back: the API imports neither the console nor
// admin, the console not admin. A row could otherwise allow it.
func TestAdminSurfacesImportNotTheirComposer(t *testing.T) {
	imports, err := moduleImports()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range adminSurfacesReachBack(imports) {
		t.Error(v)
	}
}

// adminSurfacesForbidden names, per surface of the back office, what it
// must not import.
var adminSurfacesForbidden = map[string][]string{
	"admin/api":     {"admin", "admin/console"},
	"admin/console": {"admin"},
}

// adminSurfacesReachBack says which forbidden imports the back office's
// surfaces have.
func adminSurfacesReachBack(imports map[string][]string) []string {
	var v []string
	for pkg, forbidden := range adminSurfacesForbidden {
		for _, d := range imports[pkg] {
			if slices.Contains(forbidden, d) {
				v = append(v, fmt.Sprintf("%s imports %s: admin composes the surfaces, which never import it or back (%s)", pkg, d, architectureDoc))
			}
		}
	}
	sort.Strings(v)
	return v
}

func TestAdminSurfacesReachBackFound(t *testing.T) {
	got := adminSurfacesReachBack(map[string][]string{
		"admin":         {"", "admin/api", "admin/console"},
		"admin/api":     {"", "admin/console"},
		"admin/console": {"", "admin/api"},
	})
	want := []string{"admin/api imports admin/console: admin composes the surfaces, which never import it or back (docs/architecture.md)"}
	if !slices.Equal(got, want) {
		t.Fatalf("violations = %q, want %q", got, want)
	}
}

// TestRootFilesListed holds docs/architecture.md's list of the root
// package's files, each with its one concept, to the files there are: a
// new file needs its line, so a concept cannot slip in beside another
// unnamed.
func TestRootFilesListed(t *testing.T) {
	doc, err := os.ReadFile(architectureDoc)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range checkRootFiles(rootFilesListed(doc), files) {
		t.Error(v)
	}
}

func TestCheckRootFilesFindsUnlisted(t *testing.T) {
	doc := []byte("## The root package, file by file\n\n- `order.go`: the order.\n- `gone.go`: a concept.\n\n## Next\n- `later.go`: not in the list.\n")
	got := checkRootFiles(rootFilesListed(doc), []string{"order.go", "order_test.go", "new.go", "later.go"})
	want := []string{
		"docs/architecture.md lists gone.go, which is not a file of the root package",
		"later.go is not in docs/architecture.md's list of the root package's files",
		"new.go is not in docs/architecture.md's list of the root package's files",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("violations = %q, want %q", got, want)
	}
}

var rootFileLine = regexp.MustCompile("^- `([a-z0-9_]+\\.go)`: ")

// rootFilesListed reads the files the section "The root package, file by
// file" names, one line each.
func rootFilesListed(doc []byte) []string {
	var files []string
	in := false
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = line == "## The root package, file by file"
			continue
		}
		if m := rootFileLine.FindStringSubmatch(line); in && m != nil {
			files = append(files, m[1])
		}
	}
	return files
}

// checkRootFiles compares the listed files with the package's, tests
// aside, one sentence per difference.
func checkRootFiles(listed, files []string) []string {
	var v []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") && !slices.Contains(listed, f) {
			v = append(v, fmt.Sprintf("%s is not in %s's list of the root package's files", f, architectureDoc))
		}
	}
	for _, f := range listed {
		if !slices.Contains(files, f) {
			v = append(v, fmt.Sprintf("%s lists %s, which is not a file of the root package", architectureDoc, f))
		}
	}
	sort.Strings(v)
	return v
}

var (
	tableRow   = regexp.MustCompile("^\\| `([^`]+)`( \\(root\\))? \\|")
	backticked = regexp.MustCompile("`([^`]+)`")
)

// parseArchitectureTable reads the table's rows: the package (relative to
// the module, "" for the root) and the packages of the module it may
// import. The last cell is "nothing", or a list of backticked packages
// with "root" for the root package.
func parseArchitectureTable(doc []byte) (map[string][]string, error) {
	allowed := make(map[string][]string)
	for _, line := range strings.Split(string(doc), "\n") {
		m := tableRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		pkg := m[1]
		if m[2] != "" {
			pkg = ""
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimSpace(line), "|"), " | ")
		last := strings.TrimSpace(cells[len(cells)-1])
		deps := []string{}
		switch {
		case last == "nothing":
		default:
			for _, part := range strings.Split(last, ", ") {
				part = strings.TrimSpace(part)
				if part == "root" {
					deps = append(deps, "")
					continue
				}
				d := backticked.FindStringSubmatch(part)
				if d == nil || d[0] != part {
					return nil, fmt.Errorf("%s: row %q: the imports cell must be \"nothing\" or a list of root and `packages`, got %q", architectureDoc, pkg, part)
				}
				deps = append(deps, d[1])
			}
		}
		if _, dup := allowed[pkg]; dup {
			return nil, fmt.Errorf("%s: two rows for %q", architectureDoc, pkg)
		}
		allowed[pkg] = deps
	}
	if len(allowed) == 0 {
		return nil, errors.New(architectureDoc + ": no package table")
	}
	return allowed, nil
}

// moduleImports lists each package of the module (relative to the module,
// "" for the root) with the packages of the module it imports, tests
// aside: tests may start whatever they need.
func moduleImports() (map[string][]string, error) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Module", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.String())
	}
	imports := make(map[string][]string)
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
			Module     struct{ Path string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list: decode: %w", err)
		}
		rel := func(path string) (string, bool) {
			if path == p.Module.Path {
				return "", true
			}
			r, ok := strings.CutPrefix(path, p.Module.Path+"/")
			return r, ok
		}
		pkg, _ := rel(p.ImportPath)
		deps := []string{}
		for _, imp := range p.Imports {
			if r, ok := rel(imp); ok {
				deps = append(deps, r)
			}
		}
		imports[pkg] = deps
	}
	return imports, nil
}

// checkArchitecture compares the imports with the table and says what
// differs, one sentence per difference.
func checkArchitecture(allowed, imports map[string][]string) []string {
	name := func(pkg string) string {
		if pkg == "" {
			return "the root package"
		}
		return pkg
	}
	var v []string
	for pkg, deps := range imports {
		ok, found := allowed[pkg]
		if !found {
			v = append(v, fmt.Sprintf("%s has no row in %s's table", name(pkg), architectureDoc))
			continue
		}
		for _, d := range deps {
			if !slices.Contains(ok, d) {
				v = append(v, fmt.Sprintf("%s imports %s, which %s does not allow", name(pkg), name(d), architectureDoc))
			}
		}
		for _, d := range ok {
			if !slices.Contains(deps, d) {
				v = append(v, fmt.Sprintf("%s's row in %s names %s, which it does not import", name(pkg), architectureDoc, name(d)))
			}
		}
	}
	for pkg := range allowed {
		if _, found := imports[pkg]; !found {
			v = append(v, fmt.Sprintf("%s has a row in %s but is no package of this module", name(pkg), architectureDoc))
		}
	}
	sort.Strings(v)
	return v
}
