package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/internal/app"
)

func newReportCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "report", Short: "Reports from the mirror for the back office"}
	cmd.AddCommand(newReportDailyCommand())
	return cmd
}

func newReportDailyCommand() *cobra.Command {
	var from, to, tz, account string
	var asJSON, asCSV bool
	cmd := &cobra.Command{
		Use:   "daily",
		Short: "Totals per calendar day and currency: created, paid, cancelled, finalized, reversed, net",
		Long: `daily sums the mirror's orders per calendar day of a time zone and per
currency, exactly: links created that day; orders paid that day (by when
ordersync learned of the payment: the service gives no payment time);
never-paid orders cancelled that day; orders finalized that day; orders paid
and later cancelled (reversed), on the day of the cancellation; and net,
paid less reversed, which is not the provider's payout. Days are [--from,
--to), in --tz (default: the store's time zone of the account's orders,
else UTC); days with nothing are left out. See docs/back-office.md.`,
		Args: cobra.NoArgs,
	}
	flags := app.AddConfigFlags(cmd.Flags(), app.ScopeMirror)
	cmd.Flags().StringVar(&from, "from", "", "first day, YYYY-MM-DD (required)")
	cmd.Flags().StringVar(&to, "to", "", "the day after the last one, YYYY-MM-DD (required; excluded)")
	cmd.Flags().StringVar(&tz, "tz", "", "IANA time zone of the days, e.g. America/New_York (default: the store's, else UTC)")
	cmd.Flags().StringVar(&account, "account", ordersync.DefaultAccount, "the store (merchant account), or '*' for every store side by side (days in --tz, else UTC)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the admin API's shape) instead of a table")
	cmd.Flags().BoolVar(&asCSV, "csv", false, "print CSV instead of a table")
	cmd.MarkFlagsMutuallyExclusive("json", "csv")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		params, err := api.ParseDailyTotals(account, from, to, tz)
		var ve *ordersync.ValidationError
		if errors.As(err, &ve) {
			// The API's parameters are the command's flags.
			var parts []string
			for _, name := range ve.FieldNames() {
				parts = append(parts, "--"+name+": "+strings.Join(ve.Fields[name], "; "))
			}
			return errors.New(strings.Join(parts, ", "))
		}
		if err != nil {
			return err
		}
		l, err := openMirror(cmd.Context(), flags)
		if err != nil {
			return err
		}
		defer l.Close()
		choice, err := l.chooseStore(account, true)
		if err != nil {
			return err
		}
		totals, err := api.ReadDailyTotals(cmd.Context(), l.DB(), choice, l.storeNames(), params)
		if err != nil {
			return err
		}
		if totals.Days == nil {
			totals.Days = []ordersync.DayTotals{}
		}
		switch {
		case asJSON:
			return writeIndented(cmd.OutOrStdout(), totals)
		case asCSV:
			return api.WriteDailyCSV(cmd.OutOrStdout(), totals)
		}
		zone := totals.TZ
		if loc, err := ordersync.ParseZone(totals.TZ); err == nil {
			days := ordersync.ReportDays(params.From, params.To, loc)
			zone = ordersync.ZoneLabel(loc, days[0].Start, days[len(days)-1].End)
		}
		printDailyTable(cmd.OutOrStdout(), totals, zone)
		return nil
	}
	return cmd
}

// printDailyTable writes totals as a table; zone names the zone of their
// days with its offsets.
func printDailyTable(w io.Writer, totals ordersync.DailyTotals, zone string) {
	fmt.Fprintf(w, "Days in %s; paid is when ordersync learned of the payment; net is paid less reversed, not the payout.\n", zone)
	if totals.Behind {
		fmt.Fprintf(w, "Figures as of %s: orders changed since then are not counted yet (the back office's indexer is catching up).\n",
			totals.AsOf.Format(time.RFC3339))
	}
	if len(totals.Days) == 0 {
		fmt.Fprintln(w, "No orders on these days.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	stores := slices.ContainsFunc(totals.Days, func(d ordersync.DayTotals) bool { return d.Account != "" })
	store := func(d ordersync.DayTotals) string {
		if !stores {
			return ""
		}
		return d.Account + "\t"
	}
	head := "DATE\t"
	if stores {
		head += "STORE\t"
	}
	fmt.Fprintln(tw, head+"CURRENCY\tCREATED\tPAID\tCANCELLED\tFINALIZED\tREVERSED\tNET\t")
	cell := func(t ordersync.Tally) string { return fmt.Sprintf("%d / %s", t.Count, t.Total) }
	for _, d := range totals.Days {
		fmt.Fprintf(tw, "%s\t%s%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", d.Date, store(d), d.Currency,
			cell(d.Created), cell(d.Paid), cell(d.Cancelled), cell(d.Finalized), cell(d.Reversed), d.Net)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "Each figure: orders / total.")
}
