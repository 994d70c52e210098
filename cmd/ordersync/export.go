package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/admin/api"
	"github.com/ordersync/ordersync/export"
	"github.com/ordersync/ordersync/internal/app"
)

func newOrdersExportCommand() *cobra.Command {
	var (
		set    export.Settings
		output string
	)
	cmd := &cobra.Command{
		Use:   "export --kind orders|order-lines|status-changes --output FILE [filters]",
		Short: "Export the mirror's orders, their line items or their status changes as CSV or JSON Lines",
		Long: `export writes every order the filters select, in the order of --sort
(newest first by default), reading the mirror a batch at a time: the same
filters as orders list and GET /v1/orders, the same file GET
/v1/exports/KIND streams. The file is written beside FILE and renamed to it
only when whole: a failed export leaves no partial file behind. The export is
recorded in the audit trail as the operating-system user who ran it. The
columns and what each means are in docs/back-office.md (Exports).`,
		Args: cobra.NoArgs,
	}
	flags := app.AddConfigFlags(cmd.Flags(), app.ScopeMirror)
	// The listing's filters, but its paging: an export is the whole view.
	ff := addOrderFilterFlags(cmd.Flags(), "cursor")
	cmd.Flags().Lookup("tz").Usage = "IANA time zone the dates of the ranges are read in (default UTC) and the local time columns are written in (default: the store's, else UTC)"
	cmd.Flags().StringVar(&set.Kind, "kind", string(export.Orders), "what a row is: orders, order-lines or status-changes")
	cmd.Flags().StringVar(&set.Format, "format", string(export.CSV), "csv or jsonl (JSON Lines, the CSV's columns as keys)")
	cmd.Flags().StringVar(&set.Profile, "profile", string(export.Plain), "plain (every value as mirrored) or excel (byte-order mark, formula-safe text, identifiers and phones kept as text, times a spreadsheet reads as dates); CSV only")
	cmd.Flags().StringVar(&set.Delimiter, "delimiter", ",", `the CSV's delimiter: "," or ";"`)
	cmd.Flags().StringVar(&set.Decimal, "decimal", "point", "point or comma: how amounts are written in a CSV")
	cmd.Flags().StringVarP(&output, "output", "o", "", `the file to write ("-": standard output)`)
	_ = cmd.MarkFlagRequired("output")
	cmd.RunE = func(cmd *cobra.Command, _ []string) (err error) {
		opts, err := export.ParseSettings(set)
		if err != nil {
			return err
		}
		filter, err := ff.filter(nil, nil)
		if err != nil {
			return err
		}
		l, err := openMirror(cmd.Context(), flags)
		if err != nil {
			return err
		}
		defer l.Close()
		if _, err := ff.store(l, &filter); err != nil {
			return err
		}
		// An export reads buyers' data: the trail says who, what and how it
		// ended (an interrupt records it as cancelled).
		defer func() { l.audit(cmd.Context(), "export."+string(opts.Kind), api.FilterQuery(filter), err) }()
		if opts.Location, err = export.Zone(cmd.Context(), l.DB(), filter.Account, ff.query.TZ); err != nil {
			return err
		}
		report := cmd.OutOrStdout()
		var w io.Writer = cmd.OutOrStdout()
		var file *os.File
		if output != "-" {
			if file, err = os.CreateTemp(filepath.Dir(output), "."+filepath.Base(output)+".*.part"); err != nil {
				return fmt.Errorf("--output: %w", err)
			}
			defer os.Remove(file.Name()) // a no-op once renamed
			defer file.Close()
			w = file
		} else {
			report = cmd.ErrOrStderr()
		}
		p := newProgress(cmd.ErrOrStderr(), isTerminal(cmd.ErrOrStderr()))
		start := time.Now()
		rows, err := export.Run(cmd.Context(), l.DB(), filter, opts, 0, w, func(rows int) error {
			p.show(fmt.Sprintf("exporting %s: %d rows, %s", opts.Kind, rows, time.Since(start).Round(time.Second)))
			return nil
		})
		p.done()
		if err != nil {
			return fmt.Errorf("export %s: %w (after %d rows; no file written)", opts.Kind, err, rows)
		}
		if file != nil {
			if err := file.Close(); err != nil {
				return fmt.Errorf("--output: %w", err)
			}
			if err := os.Rename(file.Name(), output); err != nil {
				return fmt.Errorf("--output: %w", err)
			}
		}
		dest := output
		if file == nil {
			dest = "standard output"
		}
		fmt.Fprintf(report, "%s to %s (times in %s)\n", plural(rows, "row"), dest, opts.Location)
		return nil
	}
	return cmd
}
