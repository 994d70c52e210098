package queue

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
)

// OldestServerVersion is the oldest nats-server release ordersync supports
// (Debian 12's package); CI runs the external-server tests against it and
// against the release the embedded server is built from.
const OldestServerVersion = "2.9.10"

// UnsupportedServerError says the connected server is older than
// OldestServerVersion.
type UnsupportedServerError struct {
	Version string
}

func (e *UnsupportedServerError) Error() string {
	return fmt.Sprintf("nats-server %s is older than %s, the oldest ordersync supports", e.Version, OldestServerVersion)
}

// CheckServerVersion returns an *UnsupportedServerError when the server nc
// is connected to is older than OldestServerVersion.
func CheckServerVersion(nc *nats.Conn) error {
	v := nc.ConnectedServerVersion()
	got, err := parseServerVersion(v)
	if err != nil {
		return fmt.Errorf("check NATS server version: %w", err)
	}
	oldest, _ := parseServerVersion(OldestServerVersion)
	if compareVersions(got, oldest) < 0 {
		return &UnsupportedServerError{Version: v}
	}
	return nil
}

// parseServerVersion reads "2.9.10", "v2.10.0-beta.1" or "2.11.0-RC.2"
// into major, minor and patch; a pre-release counts as its release.
func parseServerVersion(v string) ([3]int, error) {
	var out [3]int
	core, _, _ := strings.Cut(strings.TrimPrefix(v, "v"), "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return out, fmt.Errorf("server version %q: want major.minor.patch", v)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, fmt.Errorf("server version %q: %q is not a number", v, p)
		}
		out[i] = n
	}
	return out, nil
}

func compareVersions(a, b [3]int) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}
