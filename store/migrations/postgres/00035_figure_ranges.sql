-- The lists of a transition range (cancelled, finalized, reversed from a
-- time to another) read the range's orders from the read side: each
-- order's figure and its quarter hour, sought here by figure and bucket,
-- rather than every cancellation of the range in the status history with
-- its order's row and earlier history (store.countedRanges). Internal:
-- not part of the SQL contract (docs/schema.md).

-- +goose Up
CREATE INDEX IF NOT EXISTS report_order_figures_range ON report_order_figures (figure, bucket, account, order_row);

-- +goose Down
DROP INDEX IF EXISTS report_order_figures_range;
