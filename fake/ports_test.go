package fake_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/fake"
	"github.com/ordersync/ordersync/store/storetest"
)

// TestEveryPortOfAFakeHasItsContract: a root interface that a fake
// implements is one its contract test holds it to, the store conformance
// kit for Store and the queue and upstream contracts for Queue and
// Upstream. A port added to a fake without its contract fails here, so
// the fake cannot answer a stage in a way the real adapter was never
// checked to.
func TestEveryPortOfAFakeHasItsContract(t *testing.T) {
	ports := rootInterfaces(t)
	if len(ports) < 20 {
		t.Fatalf("found %d interfaces in the root package: too few to be its ports", len(ports))
	}
	for _, c := range []struct {
		fake     any
		contract reflect.Type
		name     string
	}{
		{fake.NewStore(), reflect.TypeFor[storetest.Store](), "storetest.Store"},
		{fake.NewQueue(), reflect.TypeFor[eventQueue](), "TestQueueContract's eventQueue"},
		{fake.NewUpstream(), reflect.TypeFor[ordersync.Upstream](), "TestUpstreamContract's ordersync.Upstream"},
	} {
		has, covered := methodNames(reflect.TypeOf(c.fake)), methodNames(c.contract)
		implemented := 0
		for name, methods := range ports {
			if !subset(methods, has) {
				continue
			}
			implemented++
			if !subset(methods, covered) {
				t.Errorf("%T implements ordersync.%s, which %s does not cover: add it to the contract", c.fake, name, c.name)
			}
		}
		if implemented == 0 {
			t.Errorf("%T implements none of the root package's interfaces", c.fake)
		}
	}
}

// rootInterfaces maps each interface type of the root package to its
// method names, embedded interfaces of the package included.
func rootInterfaces(t *testing.T) map[string][]string {
	t.Helper()
	entries, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	decls := map[string]*ast.InterfaceType{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.IsExported() {
				if it, ok := ts.Type.(*ast.InterfaceType); ok {
					decls[ts.Name.Name] = it
				}
			}
			return true
		})
	}
	var methods func(it *ast.InterfaceType) []string
	methods = func(it *ast.InterfaceType) []string {
		var out []string
		for _, f := range it.Methods.List {
			switch {
			case len(f.Names) > 0:
				for _, n := range f.Names {
					out = append(out, n.Name)
				}
			default:
				if id, ok := f.Type.(*ast.Ident); ok && decls[id.Name] != nil {
					out = append(out, methods(decls[id.Name])...)
				}
			}
		}
		return out
	}
	ports := map[string][]string{}
	for name, it := range decls {
		if m := methods(it); len(m) > 0 {
			ports[name] = m
		}
	}
	return ports
}

func methodNames(t reflect.Type) []string {
	out := make([]string, t.NumMethod())
	for i := range out {
		out[i] = t.Method(i).Name
	}
	return out
}

func subset(names, of []string) bool {
	for _, n := range names {
		if !slices.Contains(of, n) {
			return false
		}
	}
	return true
}
