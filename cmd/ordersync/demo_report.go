package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/compare"
	"github.com/ordersync/ordersync/internal/fulfilment"
	"github.com/ordersync/ordersync/sim"
)

// demoReport is what the demo measured.
type demoReport struct {
	// Stores are what the demo did in each store.
	Stores []demoStore
	// MirrorMatch holds the mirror against the simulators' orders.
	compare.MirrorMatch
	PaidOrders       int // orders PAID or FINALIZED in the simulator
	PaidTriggers     int // messages on ordersync.orders.paid
	PaidMissing      int // paid orders without a trigger
	PaidDuplicates   int // orders with more than one trigger
	PaidThenReversed int // reversed orders the mirror saw paid first
	Fetches          int64
	LagP50, LagP99   time.Duration
	Webhooks         sim.WebhookStats
	Deduplicated     float64
	// HTTP is what the demo's verifying endpoint received.
	HTTP fulfilment.Report
	// Daily is the run's daily totals per store and currency, as GET
	// /v1/reports/daily answers them (in the store's zone, summed over the
	// run's days).
	Daily []demoDaily
	// DailyMatch: each store's net in each currency is what its buyers
	// paid and kept paid.
	DailyMatch bool

	Took time.Duration
}

// OK reports whether the mirror matches the simulator and every paid order
// fired its trigger exactly once.
func (r demoReport) OK() bool {
	h := r.HTTP
	return r.Matching == r.Orders && r.PaidMissing == 0 && r.PaidDuplicates == 0 &&
		h.Missing == 0 && h.Duplicates == 0 && h.PaidTwice == 0 && h.BadSignatures == 0 && h.OutOfOrder == 0 && h.Paid == r.PaidTriggers &&
		r.DailyMatch
}

// demoDaily is one store's figures in one currency over the run's days.
type demoDaily struct {
	Account, Currency, Zone string
	Paid, Reversed          int
	PaidTotal, ReversedSum  ordersync.Amount
	Net, Want               ordersync.Amount
}

func printDemoReport(w io.Writer, r demoReport) {
	verdict := "OK"
	if !r.OK() {
		verdict = "MISMATCH"
	}
	perOrder := 0.0
	if r.Orders > 0 {
		perOrder = float64(r.Fetches) / float64(r.Orders)
	}
	fmt.Fprintf(w, "\nordersync demo: %s\n", verdict)
	for _, s := range r.Stores {
		fmt.Fprintf(w, "  store %-21s %s, %s in %s: %d orders, %d paid (%d finalized, %d reversed), %d cancelled\n",
			s.Account, s.Store.Name, s.Store.CurrencyCode, s.Store.Timezone, s.Orders, s.Acts.Paid, s.Acts.Finalized, s.Acts.Reversed, s.Acts.Cancelled)
	}
	fmt.Fprintf(w, "  orders mirrored             %d of %d, %d identical to the simulators field by field\n", r.Mirrored, r.Orders, r.Matching)
	fmt.Fprintf(w, "  PAID triggers published     %d: one for each of the %d orders now PAID or FINALIZED (%d missing, %d fired twice), %d for reversed orders seen paid first\n",
		r.PaidTriggers, r.PaidOrders, r.PaidMissing, r.PaidDuplicates, r.PaidThenReversed)
	h := r.HTTP
	fmt.Fprintf(w, "  delivered over HTTP         order.paid for %d of the %d PAID triggers (%d missing), %d status changes (%d out of order per order), %d duplicate webhook-ids, %d bad signatures\n",
		h.Paid, h.PaidWanted, h.Missing, h.Changes, h.OutOfOrder, h.Duplicates, h.BadSignatures)
	for _, d := range r.Daily {
		fmt.Fprintf(w, "  daily total (report daily)  %s %s %s net: %d paid %s, %d reversed %s; the buyers paid and kept %s (days in %s)\n",
			d.Account, d.Currency, ordersync.FormatMinorUnits(d.Net, d.Currency), d.Paid, ordersync.FormatMinorUnits(d.PaidTotal, d.Currency),
			d.Reversed, ordersync.FormatMinorUnits(d.ReversedSum, d.Currency), ordersync.FormatMinorUnits(d.Want, d.Currency), d.Zone)
	}
	fmt.Fprintf(w, "  upstream fetches per order  %.2f (%d fetches)\n", perOrder, r.Fetches)
	fmt.Fprintf(w, "  sync lag p50 / p99          %s / %s (webhook received → mirror committed)\n", r.LagP50, r.LagP99)
	fmt.Fprintf(w, "  webhooks                    %d delivered by the simulators, %d sent twice on purpose, %d reordered; %.0f deduplicated by JetStream\n",
		r.Webhooks.Delivered, r.Webhooks.Duplicated, r.Webhooks.Reordered, r.Deduplicated)
	fmt.Fprintf(w, "  took                        %.1fs\n", r.Took.Seconds())
	for _, m := range r.Mismatches {
		fmt.Fprintf(w, "  mismatch: %s\n", m)
	}
}

// counterValue sums a counter family's series whose label has value.
func counterValue(g prometheus.Gatherer, name, label, value string) float64 {
	sum := 0.0
	for _, m := range family(g, name) {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label && lp.GetValue() == value {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// histogramQuantile estimates a quantile from a histogram's buckets the way
// Prometheus' histogram_quantile does: linear within the bucket.
func histogramQuantile(g prometheus.Gatherer, name string, q float64) time.Duration {
	type bucket struct{ upper, count float64 }
	merged := map[float64]float64{}
	total := 0.0
	for _, m := range family(g, name) {
		h := m.GetHistogram()
		total += float64(h.GetSampleCount())
		for _, b := range h.GetBucket() {
			merged[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
	}
	if total == 0 {
		return 0
	}
	buckets := make([]bucket, 0, len(merged))
	for u, c := range merged {
		buckets = append(buckets, bucket{u, c})
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].upper < buckets[j].upper })
	rank := q * total
	lower, below := 0.0, 0.0
	for _, b := range buckets {
		if b.count >= rank {
			frac := 0.0
			if b.count > below {
				frac = (rank - below) / (b.count - below)
			}
			return time.Duration((lower + (b.upper-lower)*frac) * float64(time.Second)).Round(100 * time.Microsecond)
		}
		lower, below = b.upper, b.count
	}
	return time.Duration(math.Min(lower, 3600) * float64(time.Second))
}

func family(g prometheus.Gatherer, name string) []*dto.Metric {
	mfs, err := g.Gather()
	if err != nil {
		return nil
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()
		}
	}
	return nil
}

// demoDailyTotals reads each store's daily totals of the run through the
// admin API, in the store's zone, as a back office would, and works out
// from the store's simulator what they must say: the net of each currency
// is the total of the orders its buyers paid and did not have reversed.
// (Paid and reversed alone may differ: an order reversed before the
// mirror saw it paid counts in neither.)
func demoDailyTotals(ctx context.Context, st *app.Stack, start time.Time, rep *demoReport) error {
	rep.Daily, rep.DailyMatch = nil, true
	for _, account := range demoAccounts(st) {
		zone := st.Sims[account].Store().Timezone
		loc, err := ordersync.ParseZone(zone)
		if err != nil {
			return fmt.Errorf("the zone of store %s: %w", account, err)
		}
		from := start.In(loc).Format(ordersync.DateLayout)
		to := time.Now().In(loc).AddDate(0, 0, 1).Format(ordersync.DateLayout)
		var totals ordersync.DailyTotals
		q := url.Values{"account": {account}, "tz": {zone}, "from": {from}, "to": {to}}
		if err := (&admin.Client{BaseURL: st.Program.AdminURL()}).Do(ctx, http.MethodGet, "/v1/reports/daily?"+q.Encode(), nil, &totals); err != nil {
			return fmt.Errorf("daily totals of store %s: %w", account, err)
		}
		byCurrency := map[string]*demoDaily{}
		currency := func(cur string) *demoDaily {
			d := byCurrency[cur]
			if d == nil {
				zero := ordersync.AmountFromInt(0)
				first, _ := ordersync.ParseDate(from)
				end, _ := ordersync.ParseDate(to)
				days := ordersync.ReportDays(first, end, loc)
				d = &demoDaily{Account: account, Currency: cur, Zone: ordersync.ZoneLabel(loc, days[0].Start, days[len(days)-1].End),
					PaidTotal: zero, ReversedSum: zero, Net: zero, Want: zero}
				byCurrency[cur] = d
			}
			return d
		}
		for _, day := range totals.Days {
			d := currency(day.Currency)
			for _, v := range []struct {
				s   string
				dst *ordersync.Amount
			}{{day.Paid.Total, &d.PaidTotal}, {day.Reversed.Total, &d.ReversedSum}, {day.Net, &d.Net}} {
				a, err := ordersync.ParseAmount(v.s)
				if err != nil {
					return fmt.Errorf("daily totals of %s on %s: %q: %w", account, day.Date, v.s, err)
				}
				*v.dst = v.dst.Add(a)
			}
			d.Paid += day.Paid.Count
			d.Reversed += day.Reversed.Count
		}
		for _, o := range st.Sims[account].Orders() {
			if o.OrderStatus.IsPaidState() {
				d := currency(o.Store.CurrencyCode)
				d.Want = d.Want.Add(o.Total)
			}
		}
		for _, cur := range slices.Sorted(maps.Keys(byCurrency)) {
			d := byCurrency[cur]
			rep.Daily = append(rep.Daily, *d)
			rep.DailyMatch = rep.DailyMatch && d.Net.Equal(d.Want)
		}
	}
	return nil
}
