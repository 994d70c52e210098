// Package build names the running binary: the stamp the release build
// (.ci/release) writes from the source tree, else what the Go toolchain
// stamped. `ordersync version` prints it and ordersync_build_info labels
// every process's metrics with it, so the two always agree.
package build

import (
	"fmt"
	"runtime/debug"
)

// The release build stamps these with -ldflags -X from the source tree:
// the version of CHANGELOG.md's newest release, the commit ("unknown"
// outside a git checkout) and the commit's date. They win over the
// toolchain's VCS stamp, which a build from an archive lacks.
var (
	stampedVersion string
	stampedCommit  string
	stampedDate    string
)

// Info is what is known of the running binary's build.
type Info struct {
	// Version is the release's version, the module version, or "(devel)".
	Version string
	// Commit is the commit it was built from, or "unknown".
	Commit string
	// Date is the release commit's date; empty unless stamped.
	Date string
	// Modified: a build from a checkout with local changes.
	Modified bool
	// Go is the toolchain's version.
	Go string
}

// Stamp is what the release build wrote into the binary.
type Stamp struct{ Version, Commit, Date string }

// Read describes the running binary.
func Read() Info {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = &debug.BuildInfo{GoVersion: "unknown"}
	}
	return Describe(info, Stamp{stampedVersion, stampedCommit, stampedDate})
}

// Describe is the build that info and the release stamp s name: the stamp
// when the release build set one, else the toolchain's module version, VCS
// commit and whether the tree had local changes. A binary built by `go
// run` from a checkout carries no module version: "(devel)".
func Describe(info *debug.BuildInfo, s Stamp) Info {
	if s.Version != "" {
		commit := s.Commit
		if commit == "" {
			commit = "unknown"
		}
		return Info{Version: s.Version, Commit: commit, Date: s.Date, Go: info.GoVersion}
	}
	b := Info{Version: info.Main.Version, Commit: "unknown", Go: info.GoVersion}
	if b.Version == "" {
		b.Version = "(devel)"
	}
	for _, st := range info.Settings {
		switch st.Key {
		case "vcs.revision":
			b.Commit = st.Value
		case "vcs.modified":
			b.Modified = st.Value == "true"
		}
	}
	return b
}

// String is the line `ordersync version` prints.
func (b Info) String() string {
	commit := b.Commit
	if b.Modified {
		commit += " (modified)"
	}
	if b.Date != "" {
		commit += ", " + b.Date
	}
	return fmt.Sprintf("ordersync %s, commit %s, %s", b.Version, commit, b.Go)
}
