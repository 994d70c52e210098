package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/internal/app"
)

func newReindexCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reindex",
		Short: "Rebuild the back office's read side (search words, daily totals) from the mirror",
		Long: `reindex empties the back office's read side (the buyers' name words that
search reads, the daily totals' per-quarter-hour sums and what each order
counts in them) and builds it again from the mirror's orders and status
history, which it does not change. Running services keep serving meanwhile:
search by name and the daily totals say they are behind ("figures as of")
until it ends. Use it after restoring or editing the mirror by hand, or when
the read side is in doubt. See docs/back-office.md.`,
		Args: cobra.NoArgs,
	}
	flags := app.AddConfigFlags(cmd.Flags(), app.ScopeMirror)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		l, err := openMirror(cmd.Context(), flags)
		if err != nil {
			return err
		}
		defer l.Close()
		start := time.Now()
		n, err := l.DB().RebuildReadSide(cmd.Context())
		l.audit(cmd.Context(), "reindex", "read side", err)
		if err != nil {
			return fmt.Errorf("rebuild the read side: %w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Rebuilt the read side of %d orders in %s.\n", n, time.Since(start).Round(time.Millisecond))
		return nil
	}
	return cmd
}
