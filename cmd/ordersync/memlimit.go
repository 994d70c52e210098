package main

import (
	"bufio"
	"bytes"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

const (
	// defaultServeMemoryLimit is serve's soft memory limit when neither
	// GOMEMLIMIT nor a container's memory limit says otherwise: it keeps
	// the whole pipeline in one process within the peak RSS that
	// docs/benchmarks.md holds it to.
	defaultServeMemoryLimit = 90 << 20
	// containerMemoryReserve is what a container's memory limit keeps
	// beyond the Go runtime's own memory: SQLite's page cache, glibc's
	// arenas (which keep up to 64 MiB free, malloc_glibc.go) and thread
	// stacks, none of which the soft limit counts.
	containerMemoryReserve = 64 << 20
	// noCgroupLimit is where a cgroup v1 limit means none (the kernel
	// reports "unlimited" as the largest page-aligned int64).
	noCgroupLimit = 1 << 62
)

// chooseServeMemoryLimit chooses serve's soft memory limit. With GOMEMLIMIT set
// the runtime has taken it and there is nothing to set (ok false). Under
// a container's memory limit (cgroupLimit > 0) the heap may grow to that
// limit less containerMemoryReserve, and to at least half of it: a larger
// heap goal means fewer collections, and there the container's limit,
// not a figure measured on another machine, is the bound. Otherwise the
// default.
func chooseServeMemoryLimit(getenv func(string) string, cgroupLimit int64) (limit int64, ok bool) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, false
	}
	if cgroupLimit > 0 {
		return max(cgroupLimit-containerMemoryReserve, cgroupLimit/2), true
	}
	return defaultServeMemoryLimit, true
}

// cgroupMemoryLimit is the memory limit of the cgroup the process runs in,
// 0 when none is set or none can be read. root is the file system's root
// (os.DirFS("/")); the cgroup comes from /proc/self/cgroup, both cgroup
// v2 (memory.max) and v1 (memory.limit_in_bytes), looked for under the
// cgroup's own path and then at the mount's root, which is the
// container's own cgroup when it has a cgroup namespace.
func cgroupMemoryLimit(root fs.FS) int64 {
	self, err := fs.ReadFile(root, "proc/self/cgroup")
	if err != nil {
		return 0
	}
	var candidates []string
	sc := bufio.NewScanner(bytes.NewReader(self))
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			candidates = append(candidates,
				path.Join("sys/fs/cgroup", parts[2], "memory.max"),
				"sys/fs/cgroup/memory.max")
		case hasController(parts[1], "memory"):
			candidates = append(candidates,
				path.Join("sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes"),
				"sys/fs/cgroup/memory/memory.limit_in_bytes")
		}
	}
	for _, name := range candidates {
		b, err := fs.ReadFile(root, name)
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(b))
		if v == "max" {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n >= noCgroupLimit {
			return 0
		}
		return n
	}
	return 0
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}
