package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/fulfilment"
	"github.com/ordersync/ordersync/sim"
)

type demoOptions struct {
	Orders  int
	Seed    uint64
	Timeout time.Duration
	Keep    bool
	Verbose bool
}

func newDemoCommand() *cobra.Command {
	var opts demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole pipeline against the built-in simulator and check the mirror",
		Long: `demo needs nothing installed. In a temporary directory it starts the
simulator of the payment link service and the whole pipeline (embedded NATS
JetStream, SQLite), creates orders through ordersync with both methods, has
simulated buyers pay, cancel, finalize and reverse them while the simulator
delivers webhooks with duplicates and reordering, then compares every
mirrored order field by field with the simulator. It exits non-zero if the
mirror does not match.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := runDemo(cmd.Context(), cmd.OutOrStdout(), opts)
			if err != nil {
				return err
			}
			if !rep.OK() {
				return errors.New("the mirror does not match the simulator")
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&opts.Orders, "orders", 300, "how many orders to create")
	cmd.Flags().Uint64Var(&opts.Seed, "seed", 1, "seed of the buyers' choices and the simulator's faults")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 45*time.Second, "give up waiting for the mirror after this long")
	cmd.Flags().BoolVar(&opts.Keep, "keep", false, "keep the temporary data directory and print where it is")
	cmd.Flags().BoolVar(&opts.Verbose, "verbose", false, "log the pipeline's warnings and errors to stderr")
	return cmd
}

// demoReport is what the demo measured.
type demoReport struct {
	// MirrorMatch holds the mirror against the simulator's orders.
	ordersync.MirrorMatch
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
	// Daily is the run's daily totals per currency, as GET
	// /v1/reports/daily answers them (UTC, summed over the run's days).
	Daily []demoDaily
	// DailyMatch: each currency's net is what the simulator's buyers paid
	// and kept paid.
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

// demoDaily is one currency's figures of the run's days.
type demoDaily struct {
	Currency               string
	Paid, Reversed         int
	PaidTotal, ReversedSum ordersync.Amount
	Net, Want              ordersync.Amount
}

func runDemo(ctx context.Context, out io.Writer, opts demoOptions) (rep demoReport, err error) {
	start := time.Now()
	dir, err := os.MkdirTemp("", "ordersync-demo-")
	if err != nil {
		return rep, err
	}
	if opts.Keep {
		fmt.Fprintf(out, "data directory: %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	logger := slog.New(slog.DiscardHandler)
	if opts.Verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	// The endpoint outlives the pipeline, which may still be delivering
	// when the report is made.
	hook, err := fulfilment.Start(fulfilment.Faults{})
	if err != nil {
		return rep, err
	}
	defer func() { err = errors.Join(err, hook.Close()) }()
	st, err := app.StartStack(ctx, app.StackOptions{
		DataDir: dir, Logger: logger, Seed: int64(opts.Seed),
		Faults: sim.Faults{DuplicateRate: 0.15, ReorderRate: 0.15, ReorderDelay: 300 * time.Millisecond},
	})
	if err != nil {
		return rep, err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	fmt.Fprintf(out, "ordersync demo: simulator at %s, webhooks at %s, admin API at %s\n", st.SimURL, st.Program.WebhookURL(), st.Program.AdminURL())
	if err := hook.Register(ctx, &admin.Client{BaseURL: st.Program.AdminURL()}, "the demo's fulfilment"); err != nil {
		return rep, fmt.Errorf("add the demo's endpoint: %w", err)
	}
	fmt.Fprintf(out, "fulfilment endpoint at %s: order.paid and order.status_changed, verified on arrival\n", hook.URL())

	rng := rand.New(rand.NewPCG(opts.Seed, 0x0a5d))
	codes, err := createDemoOrders(ctx, st.Program.AdminURL(), opts.Orders, rng)
	if err != nil {
		return rep, err
	}
	fmt.Fprintf(out, "created %d payment links through ordersync (line items and amounts)\n", len(codes))
	acts := st.Sim.ActAsBuyers(codes, rng)
	fmt.Fprintf(out, "buyers: %d paid (%d then finalized, %d reversed), %d cancelled, %d left pending\n",
		acts.Paid, acts.Finalized, acts.Reversed, acts.Cancelled, len(codes)-acts.Paid-acts.Cancelled)

	deadline := time.Now().Add(opts.Timeout)
	for {
		rep.MirrorMatch = ordersync.MirrorMatch{}
		for _, want := range st.Sim.Orders() {
			got, err := st.Program.DB().FindOrderByCode(ctx, ordersync.DefaultAccount, want.OrderCode)
			if err != nil {
				rep.Compare(&want, nil) // not mirrored yet: the demo waits for it
				continue
			}
			rep.Compare(&want, &got.Order)
		}
		fmt.Fprintf(out, "  %5.1fs  mirrored %d/%d, %d match the simulator\n", time.Since(start).Seconds(), rep.Mirrored, rep.Orders, rep.Matching)
		if rep.Matching == rep.Orders || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	// Let the relay publish what the last commits queued.
	time.Sleep(500 * time.Millisecond)

	stats := st.Sim.Stats()
	triggers, err := st.Program.CountPaidTriggers(ctx)
	if err != nil {
		return rep, err
	}
	for _, o := range st.Sim.Orders() {
		n := triggers[o.OrderCode]
		rep.PaidTriggers += n
		switch {
		case n > 1:
			rep.PaidDuplicates++
		case o.OrderStatus.IsPaidState():
			rep.PaidOrders++
			if n == 0 {
				rep.PaidMissing++
			}
		case n == 1:
			rep.PaidThenReversed++
		}
	}
	statuses := map[string]ordersync.Status{}
	for _, o := range st.Sim.Orders() {
		statuses[o.OrderCode] = o.OrderStatus
	}
	waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	rep.HTTP, _ = hook.Wait(waitCtx, triggers, statuses)
	cancel()
	rep.Fetches = stats.Gets
	rep.Webhooks = stats.Webhooks
	reg := st.Program.Registry()
	rep.Deduplicated = counterValue(reg, "ordersync_webhook_requests_total", "outcome", "duplicate")
	rep.LagP50 = histogramQuantile(reg, "ordersync_sync_lag_seconds", 0.50)
	rep.LagP99 = histogramQuantile(reg, "ordersync_sync_lag_seconds", 0.99)
	if err := demoDailyTotals(ctx, st, start, &rep); err != nil {
		return rep, err
	}
	rep.Took = time.Since(start)
	printDemoReport(out, rep)
	return rep, nil
}

// createDemoOrders creates n links through the admin API, as a back office
// would: 60% with line items (one-time products and catalogue SKUs), 40%
// with one amount.
func createDemoOrders(ctx context.Context, adminURL string, n int, rng *rand.Rand) ([]string, error) {
	params := make([]ordersync.PaymentLinkParams, n)
	products := sim.DefaultProducts()
	for i := range params {
		p := ordersync.PaymentLinkParams{OrderReference: fmt.Sprintf("demo-%04d", i), OrderName: fmt.Sprintf("Demo order %d", i)}
		if rng.Float64() < 0.6 {
			for j := 0; j < 1+rng.IntN(3); j++ {
				if rng.Float64() < 0.5 {
					p.LineItems = append(p.LineItems, ordersync.LineItemParams{SKU: products[rng.IntN(len(products))].SKU, Quantity: 1 + rng.IntN(3)})
				} else {
					price := ordersync.MustAmount(fmt.Sprintf("%d.%02d", 1+rng.IntN(40), rng.IntN(100)))
					p.LineItems = append(p.LineItems, ordersync.LineItemParams{
						Product: &ordersync.ProductParams{Name: fmt.Sprintf("Producto %d", j+1), Price: &price}, Quantity: 1 + rng.IntN(4)})
				}
			}
		} else {
			amount := ordersync.MustAmount(fmt.Sprintf("%d.%02d", 5+rng.IntN(200), rng.IntN(100)))
			p.Amount = &amount
			p.Metadata = []ordersync.MetadataEntry{{Name: "channel", Value: "demo"}}
		}
		params[i] = p
	}
	codes := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range params {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			codes[i], errs[i] = postPaymentLink(ctx, adminURL, params[i])
		}(i)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("create payment links: %w", err)
	}
	return codes, nil
}

func postPaymentLink(ctx context.Context, adminURL string, p ordersync.PaymentLinkParams) (string, error) {
	var res ordersync.PaymentLinkResult
	if err := (&admin.Client{BaseURL: adminURL}).Do(ctx, http.MethodPost, "/v1/payment-links", p, &res); err != nil {
		return "", err
	}
	return res.OrderCode, nil
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
	fmt.Fprintf(w, "  orders mirrored             %d of %d, %d identical to the simulator field by field\n", r.Mirrored, r.Orders, r.Matching)
	fmt.Fprintf(w, "  PAID triggers published     %d: one for each of the %d orders now PAID or FINALIZED (%d missing, %d fired twice), %d for reversed orders seen paid first\n",
		r.PaidTriggers, r.PaidOrders, r.PaidMissing, r.PaidDuplicates, r.PaidThenReversed)
	h := r.HTTP
	fmt.Fprintf(w, "  delivered over HTTP         order.paid for %d of the %d PAID triggers (%d missing), %d status changes (%d out of order per order), %d duplicate webhook-ids, %d bad signatures\n",
		h.Paid, h.PaidWanted, h.Missing, h.Changes, h.OutOfOrder, h.Duplicates, h.BadSignatures)
	for _, d := range r.Daily {
		fmt.Fprintf(w, "  daily total (report daily)  %s %s net: %d paid %s, %d reversed %s; the buyers paid and kept %s\n",
			d.Currency, ordersync.FormatMinorUnits(d.Net, d.Currency), d.Paid, ordersync.FormatMinorUnits(d.PaidTotal, d.Currency),
			d.Reversed, ordersync.FormatMinorUnits(d.ReversedSum, d.Currency), ordersync.FormatMinorUnits(d.Want, d.Currency))
	}
	fmt.Fprintf(w, "  upstream fetches per order  %.2f (%d fetches)\n", perOrder, r.Fetches)
	fmt.Fprintf(w, "  sync lag p50 / p99          %s / %s (webhook received → mirror committed)\n", r.LagP50, r.LagP99)
	fmt.Fprintf(w, "  webhooks                    %d delivered by the simulator, %d sent twice on purpose, %d reordered; %.0f deduplicated by JetStream\n",
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

// demoDailyTotals reads the run's daily totals through the admin API, as a
// back office would, and works out from the simulator what they must say:
// the net of each currency is the total of the orders its buyers paid and
// did not have reversed. (Paid and reversed alone may differ: an order
// reversed before the mirror saw it paid counts in neither.)
func demoDailyTotals(ctx context.Context, st *app.Stack, start time.Time, rep *demoReport) error {
	from := start.UTC().Format(ordersync.DateLayout)
	to := time.Now().UTC().AddDate(0, 0, 1).Format(ordersync.DateLayout)
	var totals ordersync.DailyTotals
	if err := (&admin.Client{BaseURL: st.Program.AdminURL()}).Do(ctx, http.MethodGet, "/v1/reports/daily?tz=UTC&from="+from+"&to="+to, nil, &totals); err != nil {
		return fmt.Errorf("daily totals: %w", err)
	}
	byCurrency := map[string]*demoDaily{}
	currency := func(cur string) *demoDaily {
		d := byCurrency[cur]
		if d == nil {
			zero := ordersync.AmountFromInt(0)
			d = &demoDaily{Currency: cur, PaidTotal: zero, ReversedSum: zero, Net: zero, Want: zero}
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
				return fmt.Errorf("daily totals of %s: %q: %w", day.Date, v.s, err)
			}
			*v.dst = v.dst.Add(a)
		}
		d.Paid += day.Paid.Count
		d.Reversed += day.Reversed.Count
	}
	for _, o := range st.Sim.Orders() {
		if o.OrderStatus.IsPaidState() {
			d := currency(o.Store.CurrencyCode)
			d.Want = d.Want.Add(o.Total)
		}
	}
	rep.Daily, rep.DailyMatch = nil, true
	for _, d := range byCurrency {
		rep.Daily = append(rep.Daily, *d)
		rep.DailyMatch = rep.DailyMatch && d.Net.Equal(d.Want)
	}
	slices.SortFunc(rep.Daily, func(a, b demoDaily) int { return strings.Compare(a.Currency, b.Currency) })
	return nil
}
