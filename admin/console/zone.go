package console

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
)

// zoneCookie remembers, per browser, whether times show in the store's
// time zone ("store", the default) or in UTC ("utc").
const zoneCookie = "ordersync_zone"

// zoneOf is the zone the console shows times in for r: UTC when the
// browser chose it or the store names no (known) zone, else the store's.
func (s *Console) zoneOf(r *http.Request, storeZone string) (*time.Location, string) {
	if c, err := r.Cookie(zoneCookie); err == nil && c.Value == "utc" {
		return time.UTC, "utc"
	}
	if storeZone == "" {
		return time.UTC, "store"
	}
	loc, err := time.LoadLocation(storeZone)
	if err != nil || storeZone == "Local" {
		return time.UTC, "store"
	}
	return loc, "store"
}

// storeZone is the time zone of the account's store, "" when unknown.
func (s *Console) storeZone(ctx context.Context, account string) string {
	if s.cfg.Exports == nil {
		return ""
	}
	tz, err := s.cfg.Exports.StoreTimeZone(ctx, account)
	if err != nil {
		s.cfg.Logger.Warn("admin: read the store's time zone", "account", account, "err", err)
		return ""
	}
	return tz
}

// switchZone remembers the browser's choice of zone and goes back to the
// page it came from. It changes nothing on the server, so it is a link
// (GET) that needs no role and leaves no audit record.
func (s *Console) switchZone(w http.ResponseWriter, r *http.Request) {
	zone := r.URL.Query().Get("zone")
	if zone != "utc" && zone != "store" {
		api.WriteProblem(w, http.StatusBadRequest, "invalid query", map[string][]string{"zone": {fmt.Sprintf("%q: want store or utc", zone)}})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: zoneCookie, Value: zone, Path: "/console/", MaxAge: 365 * 24 * 3600,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
	http.Redirect(w, r, cmp.Or(consoleReturn(r.URL.Query().Get("back")), "/console/orders"), http.StatusSeeOther)
}

// Moment is a time as the console shows it: in the page's zone, with UTC
// for the hover and the machine-readable attribute.
type Moment struct {
	Shown, UTC, ISO string
}

func momentOf(t time.Time, loc *time.Location) Moment {
	if t.IsZero() {
		return Moment{}
	}
	return Moment{Shown: shownAt(t, loc), UTC: t.UTC().Format("2006-01-02 15:04:05 UTC"), ISO: t.UTC().Format(time.RFC3339)}
}

// shownAt writes t in loc with its offset from UTC (2026-10-10 06:50
// UTC−06:00), or UTC: an abbreviation such as CST names several zones.
func shownAt(t time.Time, loc *time.Location) string {
	if loc == time.UTC {
		return t.UTC().Format("2006-01-02 15:04") + " UTC"
	}
	t = t.In(loc)
	_, offset := t.Zone()
	return t.Format("2006-01-02 15:04") + " " + ordersync.UTCOffset(offset)
}

func momentOfPtr(t *time.Time, loc *time.Location) Moment {
	if t == nil {
		return Moment{}
	}
	return momentOf(*t, loc)
}

// ZoneSwitch is the header's time-zone switch of a page.
type ZoneSwitch struct {
	Mode, Store, Back string
}

// Offset is the store's zone's offset from UTC now (UTC−06:00), "" when
// the store names no zone this binary knows.
func (z ZoneSwitch) Offset() string {
	loc, err := ordersync.ParseZone(z.Store)
	if err != nil || z.Store == "" {
		return ""
	}
	_, offset := time.Now().In(loc).Zone()
	return ordersync.UTCOffset(offset)
}
