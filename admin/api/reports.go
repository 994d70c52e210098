package api

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
)

// ParseDailyTotals reads a daily report's range and zone as the API and the
// CLI take them: from and to as YYYY-MM-DD (to excluded), tz an IANA zone
// name ("" for the store's). A bad value is a *ordersync.ValidationError
// keyed by the parameter's name.
func ParseDailyTotals(account, from, to, tz string) (ordersync.DailyTotalsParams, error) {
	p := ordersync.DailyTotalsParams{Account: account}
	fields := map[string][]string{}
	var err error
	if from == "" {
		fields["from"] = []string{"is required: a date, YYYY-MM-DD"}
	} else if p.From, err = ordersync.ParseDate(from); err != nil {
		fields["from"] = []string{err.Error()}
	}
	if to == "" {
		fields["to"] = []string{"is required: a date, YYYY-MM-DD, the day after the last one reported"}
	} else if p.To, err = ordersync.ParseDate(to); err != nil {
		fields["to"] = []string{err.Error()}
	}
	if tz = strings.TrimSpace(tz); tz != "" {
		if p.Location, err = ordersync.ParseZone(tz); err != nil {
			fields["tz"] = []string{err.Error()}
		}
	}
	if len(fields) > 0 {
		return p, &ordersync.ValidationError{Title: "invalid report query", Fields: fields}
	}
	return p, p.Validate()
}

// ReadDailyTotals reads the daily totals of the chosen store, or of every
// store in stores side by side (ordersync.MergeStoreTotals): the days of
// several stores are those of one zone, p's, else UTC, so that their
// figures cover the same instants.
func ReadDailyTotals(ctx context.Context, reports ordersync.Reports, choice StoreChoice, stores []string, p ordersync.DailyTotalsParams) (ordersync.DailyTotals, error) {
	if !choice.All {
		p.Account = choice.Account
		return reports.DailyTotals(ctx, p)
	}
	if p.Location == nil {
		p.Location = time.UTC
	}
	byStore := make(map[string]ordersync.DailyTotals, len(stores))
	for _, store := range stores {
		p.Account = store
		t, err := reports.DailyTotals(ctx, p)
		if err != nil {
			return ordersync.DailyTotals{}, fmt.Errorf("store %s: %w", store, err)
		}
		byStore[store] = t
	}
	return ordersync.MergeStoreTotals(p.Location.String(), byStore), nil
}

// DailyTotalsFor reads the chosen store's (or stores') daily totals for
// the request's range, or answers the parse or read error and returns
// false.
func (h *Handlers) DailyTotalsFor(w http.ResponseWriter, r *http.Request, from, to, tz string) (ordersync.DailyTotals, bool) {
	choice, err := h.deps.Stores.Choose(r, true)
	if err != nil {
		h.office.Fail(w, "daily totals", err, "")
		return ordersync.DailyTotals{}, false
	}
	params, err := ParseDailyTotals(choice.Account, from, to, tz)
	if err != nil {
		h.office.Fail(w, "daily totals", err, "")
		return ordersync.DailyTotals{}, false
	}
	totals, err := ReadDailyTotals(r.Context(), h.deps.Reports, choice, h.deps.Stores.List(), params)
	if err != nil {
		h.office.Fail(w, "daily totals", err, "")
		return ordersync.DailyTotals{}, false
	}
	return totals, true
}

// dailyTotals answers GET /v1/reports/daily.
func (h *Handlers) dailyTotals(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	totals, ok := h.DailyTotalsFor(w, r, q.Get("from"), q.Get("to"), q.Get("tz"))
	if !ok {
		return
	}
	if totals.Days == nil {
		totals.Days = []ordersync.DayTotals{}
	}
	WriteJSON(w, http.StatusOK, totals)
}

// DailyCSVHeader names the columns of a daily report as CSV (the CLI's
// --csv and the console's download); columns are only ever appended.
var DailyCSVHeader = []string{"date", "tz", "currency",
	"created_count", "created_total", "paid_count", "paid_total", "cancelled_count", "cancelled_total",
	"finalized_count", "finalized_total", "reversed_count", "reversed_total", "net", "account"}

// WriteDailyCSV writes totals as CSV, one row per day and currency, the
// amounts exact as the report gives them.
func WriteDailyCSV(w io.Writer, totals ordersync.DailyTotals) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(DailyCSVHeader); err != nil {
		return err
	}
	for _, d := range totals.Days {
		row := []string{d.Date, totals.TZ, d.Currency}
		for _, t := range []ordersync.Tally{d.Created, d.Paid, d.Cancelled, d.Finalized, d.Reversed} {
			row = append(row, strconv.Itoa(t.Count), t.Total)
		}
		if err := cw.Write(append(row, d.Net, d.Account)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
