package testenv

import (
	"bytes"
	"os"
	"testing"
)

// Golden holds got to the golden file at path, or writes it there when
// update is set (a test's -update flag, for a deliberate change of what
// the file holds).
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s changed:\n got %s\nwant %s", path, got, want)
	}
}
