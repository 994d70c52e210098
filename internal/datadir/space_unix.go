//go:build unix

package datadir

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// statfs reads the filesystem's blocks available to an unprivileged
// process: the root-reserved ones are no room for ordersync.
func statfs(path string) (Usage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return Usage{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	bs := uint64(st.Bsize)
	return Usage{Free: uint64(st.Bavail) * bs, Total: uint64(st.Blocks) * bs}, nil
}
