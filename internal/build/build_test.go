package build

import (
	"runtime/debug"
	"testing"
)

// TestDescribe: what `ordersync version` prints for each way a binary is
// built.
func TestDescribe(t *testing.T) {
	tests := []struct {
		name  string
		info  debug.BuildInfo
		stamp Stamp
		want  string
	}{
		{"a tagged release", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "048eea1"}, {Key: "vcs.modified", Value: "false"}}},
			Stamp{}, "ordersync v1.2.0, commit 048eea1, go1.26.8"},
		{"a checkout with local changes", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "048eea1"}, {Key: "vcs.modified", Value: "true"}}},
			Stamp{}, "ordersync (devel), commit 048eea1 (modified), go1.26.8"},
		{"built without VCS stamping", debug.BuildInfo{GoVersion: "go1.26.8"},
			Stamp{}, "ordersync (devel), commit unknown, go1.26.8"},
		{"a release build from a checkout", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "048eea1"}}},
			Stamp{"0.1.0", "560ec5f", "2026-11-27T13:00:00Z"}, "ordersync 0.1.0, commit 560ec5f, 2026-11-27T13:00:00Z, go1.26.8"},
		{"a release build from an archive", debug.BuildInfo{GoVersion: "go1.26.8"},
			Stamp{"0.1.0", "", "2026-11-27"}, "ordersync 0.1.0, commit unknown, 2026-11-27, go1.26.8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Describe(&tt.info, tt.stamp).String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
