package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// The release build (.ci/release) stamps these with -ldflags -X from the
// source tree: the version of CHANGELOG.md's newest release, the commit
// ("unknown" outside a git checkout) and the commit's date. They win over
// the toolchain's VCS stamp, which a build from an archive lacks.
var (
	stampedVersion string
	stampedCommit  string
	stampedDate    string
)

// stamp is what the release build wrote into the binary.
type stamp struct{ version, commit, date string }

// buildVersion describes the running binary: the release stamp when the
// release build set one, else what the Go toolchain stamped into it (the
// module version, the VCS commit and whether the tree had local changes),
// and the Go version. A binary built by `go run` from a checkout carries no
// module version, which it reports as "(devel)".
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "ordersync (no build information)"
	}
	return formatVersion(info, stamp{stampedVersion, stampedCommit, stampedDate})
}

func formatVersion(info *debug.BuildInfo, s stamp) string {
	if s.version != "" {
		commit := s.commit
		if commit == "" {
			commit = "unknown"
		}
		built := ""
		if s.date != "" {
			built = ", " + s.date
		}
		return fmt.Sprintf("ordersync %s, commit %s%s, %s", s.version, commit, built, info.GoVersion)
	}
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	commit, modified := "unknown", ""
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = " (modified)"
			}
		}
	}
	return fmt.Sprintf("ordersync %s, commit %s%s, %s", version, commit, modified, info.GoVersion)
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), buildVersion())
			return err
		},
	}
}
