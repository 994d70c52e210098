package ordersync

import (
	"archive/zip"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseZone(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"America/El_Salvador", "America/El_Salvador"},
		{"america/el_salvador", "America/El_Salvador"},
		{"EUROPE/MADRID", "Europe/Madrid"},
		{" Europe/Madrid ", "Europe/Madrid"},
		{"UTC", "UTC"},
		{"utc", "UTC"},
		{"america/port-au-prince", "America/Port-au-Prince"},
		{"etc/gmt+5", "Etc/GMT+5"},
	} {
		loc, err := ParseZone(tc.in)
		if err != nil || loc.String() != tc.want {
			t.Errorf("ParseZone(%q) = %v, %v; want %s", tc.in, loc, err, tc.want)
		}
	}
	for _, bad := range []string{"", "Local", "CST", "Mars/Olympus", "../../etc/passwd", "/usr/share/zoneinfo/UTC"} {
		if loc, err := ParseZone(bad); err == nil {
			t.Errorf("ParseZone(%q) = %v; want an error", bad, loc)
		} else if !strings.Contains(err.Error(), "IANA") {
			t.Errorf("ParseZone(%q): %v; want the rule named", bad, err)
		}
	}
}

func TestZoneLabel(t *testing.T) {
	sv, _ := time.LoadLocation("America/El_Salvador")
	md, _ := time.LoadLocation("Europe/Madrid")
	day := func(loc *time.Location, y int, m time.Month, d int) time.Time {
		return time.Date(y, m, d, 0, 0, 0, 0, loc)
	}
	for _, tc := range []struct {
		loc      *time.Location
		from, to time.Time
		want     string
	}{
		{sv, day(sv, 2026, 11, 1), day(sv, 2026, 11, 4), "America/El_Salvador (UTC−06:00)"},
		{md, day(md, 2026, 11, 1), day(md, 2026, 11, 4), "Europe/Madrid (UTC+01:00)"},
		{md, day(md, 2026, 7, 1), day(md, 2026, 7, 2), "Europe/Madrid (UTC+02:00)"},
		{md, day(md, 2026, 10, 20), day(md, 2026, 11, 3), "Europe/Madrid (UTC+02:00, UTC+01:00)"},
		{time.UTC, day(time.UTC, 2026, 1, 1), day(time.UTC, 2026, 1, 2), "UTC (UTC+00:00)"},
	} {
		if got := ZoneLabel(tc.loc, tc.from, tc.to); got != tc.want {
			t.Errorf("ZoneLabel(%s, %s, %s) = %q; want %q", tc.loc, tc.from, tc.to, got, tc.want)
		}
	}
}

// TestZoneNamesAreTheBinarys keeps zonenames.txt equal to the zones of the Go
// that builds the binary: a zone it carries is one ParseZone must accept.
func TestZoneNamesAreTheBinarys(t *testing.T) {
	z, err := zip.OpenReader(filepath.Join(runtime.GOROOT(), "lib", "time", "zoneinfo.zip"))
	if err != nil {
		t.Skipf("no zoneinfo.zip in GOROOT: %v", err)
	}
	defer z.Close()
	var names []string
	for _, f := range z.File {
		if !strings.HasSuffix(f.Name, "/") {
			names = append(names, f.Name)
		}
	}
	slices.Sort(names)
	listed := strings.Fields(zoneNamesText)
	if !slices.Equal(names, listed) {
		t.Fatalf("zonenames.txt lists %d zones, Go carries %d: regenerate it from $GOROOT/lib/time/zoneinfo.zip (unzip -Z1, sorted, directories left out)", len(listed), len(names))
	}
	for _, n := range listed {
		if _, err := time.LoadLocation(n); err != nil {
			t.Errorf("zone %s: %v", n, err)
		}
	}
}
