package ordersync

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"
	"time"
	// Zones come from the binary, so a machine without a time-zone database
	// reads a zone the same.
	_ "time/tzdata"
)

// zoneNamesText lists the IANA zone names time/tzdata carries, one a line;
// TestZoneNamesAreTheBinarys keeps it equal to the zones of the Go that
// builds the binary.
//
//go:embed zonenames.txt
var zoneNamesText string

// zonesByFold maps each IANA zone name in lower case to its spelling.
var zonesByFold = sync.OnceValue(func() map[string]string {
	names := strings.Fields(zoneNamesText)
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[strings.ToLower(n)] = n
	}
	return m
})

// ZoneRule is what ParseZone accepts, in the words of an error message.
const ZoneRule = "want an IANA zone such as America/El_Salvador, Europe/Madrid or UTC (any case)"

// ParseZone reads a time zone as every surface of the back office takes
// one: an IANA name in any case ("america/el_salvador", "UTC", "utc").
// "Local" and file paths are refused: a figure must not depend on the
// machine that computed it.
func ParseZone(name string) (*time.Location, error) {
	name = strings.TrimSpace(name)
	if strings.EqualFold(name, "UTC") {
		return time.UTC, nil
	}
	canonical, ok := zonesByFold()[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("unknown time zone %q: %s", Clip(name, 64), ZoneRule)
	}
	loc, err := time.LoadLocation(canonical)
	if err != nil {
		return nil, fmt.Errorf("time zone %q: %w", canonical, err)
	}
	return loc, nil
}

// ZoneLabel names the zone of a page's day boundaries over [from, to): its
// IANA name and its offset from UTC, or the offsets it takes when a
// daylight-saving change falls in the range ("America/El_Salvador
// (UTC−06:00)", "Europe/Madrid (UTC+01:00, UTC+02:00)"). An abbreviation
// such as CST names several zones, so a page never shows one alone.
func ZoneLabel(loc *time.Location, from, to time.Time) string {
	return loc.String() + " (" + strings.Join(ZoneOffsets(loc, from, to), ", ") + ")"
}

// ZoneOffsets are the offsets from UTC loc takes over [from, to), in the
// order it takes them (["UTC−06:00"], ["UTC+01:00", "UTC+02:00"]).
func ZoneOffsets(loc *time.Location, from, to time.Time) []string {
	if to.Before(from) {
		from, to = to, from
	}
	var offsets []string
	add := func(t time.Time) {
		_, secs := t.In(loc).Zone()
		o := UTCOffset(secs)
		for _, seen := range offsets {
			if seen == o {
				return
			}
		}
		offsets = append(offsets, o)
	}
	add(from)
	// A zone changes its offset at most a few times a year: a step of a
	// day finds every offset a range of days takes.
	for t := from.Add(24 * time.Hour); t.Before(to) && len(offsets) < 4; t = t.Add(24 * time.Hour) {
		add(t)
	}
	if to.After(from) {
		add(to.Add(-time.Nanosecond))
	}
	return offsets
}

// UTCOffset writes an offset from UTC in seconds as UTC+01:00 or
// UTC−06:00 (a minus sign, not a hyphen); UTC itself is UTC+00:00.
func UTCOffset(secs int) string {
	sign := "+"
	if secs < 0 {
		sign, secs = "−", -secs
	}
	return fmt.Sprintf("UTC%s%02d:%02d", sign, secs/3600, secs%3600/60)
}
