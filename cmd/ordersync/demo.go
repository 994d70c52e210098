package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin"
	"github.com/ordersync/ordersync/internal/app"
	"github.com/ordersync/ordersync/internal/compare"
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
whole pipeline (embedded NATS JetStream, SQLite) serving two stores, each an
account with its own simulator of the payment link service: USD in
America/El_Salvador and EUR in Europe/Madrid. It creates orders in both
through ordersync with both methods, has simulated buyers pay, cancel,
finalize and reverse them while the simulators deliver webhooks with
duplicates and reordering, then compares every mirrored order field by
field with its simulator and each store's daily totals with what its buyers
paid. It exits non-zero if the mirror does not match.`,
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
	cmd.Flags().IntVar(&opts.Orders, "orders", 300, "how many orders to create, split between the two stores")
	cmd.Flags().Uint64Var(&opts.Seed, "seed", 1, "seed of the buyers' choices and the simulator's faults")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 45*time.Second, "give up waiting for the mirror after this long")
	cmd.Flags().BoolVar(&opts.Keep, "keep", false, "keep the temporary data directory and print where it is")
	cmd.Flags().BoolVar(&opts.Verbose, "verbose", false, "log the pipeline's warnings and errors to stderr")
	return cmd
}

// demoSecondStore is the demo's second account, whose simulator plays
// sim.MadridStore beside the default account's sim.DefaultStore.
const demoSecondStore = "madrid"

// demoStore is what the demo did in one store.
type demoStore struct {
	Account string
	Store   ordersync.StoreInfo
	Orders  int
	Acts    sim.BuyerActs
}

// demoAccounts are the stack's accounts, the default first.
func demoAccounts(st *app.Stack) []string {
	accounts := []string{ordersync.DefaultAccount}
	for _, a := range slices.Sorted(maps.Keys(st.Sims)) {
		if a != ordersync.DefaultAccount {
			accounts = append(accounts, a)
		}
	}
	return accounts
}

// demoCallingCode is the calling code of the store's buyers' phones.
func demoCallingCode(country string) string {
	if code, ok := sim.CallingCode(country); ok {
		return code
	}
	return country
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
		Stores: []app.StackStore{{Account: demoSecondStore, Store: sim.MadridStore}},
	})
	if err != nil {
		return rep, err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	fmt.Fprintf(out, "ordersync demo: webhooks at %s, admin API at %s\n", st.Program.WebhookURL(), st.Program.AdminURL())
	if err := hook.Register(ctx, &admin.Client{BaseURL: st.Program.AdminURL()}, "the demo's fulfilment"); err != nil {
		return rep, fmt.Errorf("add the demo's endpoint: %w", err)
	}
	fmt.Fprintf(out, "fulfilment endpoint at %s: order.paid and order.status_changed, verified on arrival\n", hook.URL())

	rng := rand.New(rand.NewPCG(opts.Seed, 0x0a5d))
	accounts := demoAccounts(st)
	created := 0
	for i, account := range accounts {
		sv := st.Sims[account]
		// The orders split between the stores, the first taking the odd one.
		n := opts.Orders / len(accounts)
		if i < opts.Orders%len(accounts) {
			n++
		}
		codes, err := createDemoOrders(ctx, st.Program.AdminURL(), account, n, rng)
		if err != nil {
			return rep, err
		}
		created += len(codes)
		acts := sv.ActAsBuyers(codes, rng)
		store := sv.Store()
		ds := demoStore{Account: account, Store: store, Orders: len(codes), Acts: acts}
		rep.Stores = append(rep.Stores, ds)
		fmt.Fprintf(out, "store %s: %s (%s, %s, %s phones), simulator at %s\n", account, store.Name, store.CurrencyCode, store.Timezone,
			demoCallingCode(store.CountryCode), st.SimURLs[account])
		fmt.Fprintf(out, "  created %d payment links through ordersync (line items and amounts); buyers: %d paid (%d then finalized, %d reversed), %d cancelled, %d left pending\n",
			len(codes), acts.Paid, acts.Finalized, acts.Reversed, acts.Cancelled, len(codes)-acts.Paid-acts.Cancelled)
	}

	deadline := time.Now().Add(opts.Timeout)
	for {
		rep.MirrorMatch = compare.MirrorMatch{}
		for _, account := range accounts {
			for _, want := range st.Sims[account].Orders() {
				got, err := st.Program.DB().FindOrderByCode(ctx, account, want.OrderCode)
				if err != nil {
					rep.Compare(&want, nil) // not mirrored yet: the demo waits for it
					continue
				}
				rep.Compare(&want, &got.Order)
			}
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
	// The relay publishes what the last commits queued before the triggers
	// are counted.
	if _, err := waitOutboxSent(ctx, st.Program.DB(), 10*time.Second); err != nil {
		return rep, err
	}

	triggers, err := st.Program.CountPaidTriggers(ctx)
	if err != nil {
		return rep, err
	}
	var orders []ordersync.Order
	for _, account := range accounts {
		orders = append(orders, st.Sims[account].Orders()...)
		stats := st.Sims[account].Stats()
		rep.Fetches += stats.Gets
		w := &rep.Webhooks
		w.Delivered += stats.Webhooks.Delivered
		w.Duplicated += stats.Webhooks.Duplicated
		w.Reordered += stats.Webhooks.Reordered
	}
	for _, o := range orders {
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
	for _, o := range orders {
		statuses[o.OrderCode] = o.OrderStatus
	}
	waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	rep.HTTP, _ = hook.Wait(waitCtx, triggers, statuses)
	cancel()
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
func createDemoOrders(ctx context.Context, adminURL, account string, n int, rng *rand.Rand) ([]string, error) {
	params := make([]ordersync.PaymentLinkParams, n)
	prefix := "demo-"
	if account != ordersync.DefaultAccount {
		prefix += account + "-"
	}
	products := sim.DefaultProducts()
	for i := range params {
		p := ordersync.PaymentLinkParams{OrderReference: fmt.Sprintf("%s%04d", prefix, i), OrderName: fmt.Sprintf("Demo order %d", i)}
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
			codes[i], errs[i] = postPaymentLink(ctx, adminURL, account, params[i])
		}(i)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("create payment links: %w", err)
	}
	return codes, nil
}

func postPaymentLink(ctx context.Context, adminURL, account string, p ordersync.PaymentLinkParams) (string, error) {
	var res ordersync.PaymentLinkResult
	if err := (&admin.Client{BaseURL: adminURL}).Do(ctx, http.MethodPost, "/v1/payment-links?account="+url.QueryEscape(account), p, &res); err != nil {
		return "", err
	}
	return res.OrderCode, nil
}

// waitOutboxSent waits until the outbox holds no unsent message, and says
// whether it came to that before limit passed or ctx ended. The relay marks
// a message sent only once JetStream acked it, so an empty outbox means
// every message the mirror queued is in the stream.
func waitOutboxSent(ctx context.Context, outbox ordersync.Outbox, limit time.Duration) (bool, error) {
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		pending, err := outbox.PendingOutbox(ctx, 1)
		if err != nil || len(pending) == 0 {
			return err == nil, err
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, nil
		case <-tick.C:
		}
	}
}
