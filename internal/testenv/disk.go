package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// MountTmpfs mounts a tmpfs of size bytes at a temporary directory, or
// skips the test where mounting is not allowed; the test's cleanup
// unmounts it.
func MountTmpfs(t testing.TB, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (needs root and mount(8)): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// FillLeaving writes a file until the filesystem at dir has at most leave
// bytes free (0: until it is full), and returns its path.
func FillLeaving(t testing.TB, dir string, leave uint64) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil {
			t.Fatal(err)
		}
		if free := uint64(st.Bavail) * uint64(st.Bsize); leave > 0 && free <= leave {
			return path
		}
		if _, err := f.Write(chunk); err != nil {
			return path
		}
	}
}
