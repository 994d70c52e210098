package main

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestMallocTuned: on Linux with glibc the program sets malloc up while it
// loads, and a GLIBC_TUNABLES that sets any malloc tunable leaves glibc's
// settings alone (checked in a child started with one).
func TestMallocTuned(t *testing.T) {
	t.Parallel()
	if os.Getenv("ORDERSYNC_TEST_MALLOC_CHILD") != "" {
		if mallocTuned() {
			t.Fatal("malloc was set up although GLIBC_TUNABLES sets glibc.malloc.arena_max")
		}
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("the settings are glibc's, on Linux only")
	}
	if strings.Contains(os.Getenv("GLIBC_TUNABLES"), "glibc.malloc.") {
		t.Skip("GLIBC_TUNABLES sets malloc tunables for this run")
	}
	if !mallocTuned() {
		t.Error("malloc was not set up at load (not glibc, or mallopt refused a setting)")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestMallocTuned$", "-test.count", "1")
	// Without the PostgreSQL URL, the child's TestMain does not migrate
	// the scale-out tests' template (testdb.Prepare).
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "ORDERSYNC_TEST_POSTGRES_URL=") })
	cmd.Env = append(env, "ORDERSYNC_TEST_MALLOC_CHILD=1", "GLIBC_TUNABLES=glibc.malloc.arena_max=4")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("child with GLIBC_TUNABLES: %v\n%s", err, out)
	}
}
