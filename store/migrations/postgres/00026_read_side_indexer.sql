-- The back office's read side (the name words of order_name_tokens and
-- report_buckets) is kept by the indexer (store/indexer.go) off the apply
-- transaction: the apply appends one row per changed order to
-- mirror_changes, and the indexer takes them in id order, a batch per
-- transaction, and deletes what it took (ids commit out of order here, so
-- what is left is what is unindexed). report_order_figures holds what each
-- order counts in report_buckets, so that the indexer takes out what an
-- order counted before adding what it counts now. indexer_position is the
-- last change indexed and when. The triggers' functions stay for the Down.
-- Internal: not part of the SQL contract (docs/schema.md).

-- +goose Up
DROP TRIGGER report_buckets_status_change ON status_history;
DROP TRIGGER report_buckets_order_delete ON orders;
DROP TRIGGER report_buckets_order_after_update ON orders;
DROP TRIGGER report_buckets_order_before_update ON orders;
DROP TRIGGER report_buckets_order_insert ON orders;

CREATE TABLE mirror_changes (
    id        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_row BIGINT      NOT NULL,
    at        TIMESTAMPTZ NOT NULL
);

CREATE TABLE report_order_figures (
    order_row   BIGINT NOT NULL,
    figure      TEXT   NOT NULL,
    account     TEXT   NOT NULL,
    bucket      BIGINT NOT NULL,
    currency    TEXT   NOT NULL,
    total_minor BIGINT,
    PRIMARY KEY (order_row, figure)
);

INSERT INTO report_order_figures (order_row, figure, account, bucket, currency, total_minor)
SELECT order_row, figure, account, floor(extract(epoch FROM at) / 900)::bigint, currency, total_minor FROM internal_report_figures;

CREATE TABLE indexer_position (
    one        INTEGER PRIMARY KEY CHECK (one = 1),
    position   BIGINT NOT NULL,
    indexed_at TIMESTAMPTZ
);
INSERT INTO indexer_position (one, position) VALUES (1, 0);

-- +goose Down
DROP TABLE indexer_position;
DROP TABLE report_order_figures;
DROP TABLE mirror_changes;
-- The buckets as the triggers would have kept them, changes the indexer
-- had not taken included.
DELETE FROM report_buckets;
INSERT INTO report_buckets (account, bucket, figure, currency, summed, total_minor, unsummed)
SELECT account, floor(extract(epoch FROM at) / 900)::bigint, figure, currency,
       COUNT(total_minor), COALESCE(SUM(total_minor), 0), COUNT(*) - COUNT(total_minor)
FROM internal_report_figures
GROUP BY 1, 2, 3, 4;
CREATE TRIGGER report_buckets_order_insert AFTER INSERT ON orders
FOR EACH ROW WHEN (NEW.total IS NOT NULL) EXECUTE FUNCTION report_buckets_order_new();
CREATE TRIGGER report_buckets_order_before_update BEFORE UPDATE ON orders FOR EACH ROW
WHEN (OLD.account IS DISTINCT FROM NEW.account OR OLD.created_at IS DISTINCT FROM NEW.created_at
   OR OLD.paid_at IS DISTINCT FROM NEW.paid_at OR OLD.store_currency_code IS DISTINCT FROM NEW.store_currency_code
   OR OLD.total IS DISTINCT FROM NEW.total OR OLD.total_minor IS DISTINCT FROM NEW.total_minor)
EXECUTE FUNCTION report_buckets_order_out();
CREATE TRIGGER report_buckets_order_after_update AFTER UPDATE ON orders FOR EACH ROW
WHEN (OLD.account IS DISTINCT FROM NEW.account OR OLD.created_at IS DISTINCT FROM NEW.created_at
   OR OLD.paid_at IS DISTINCT FROM NEW.paid_at OR OLD.store_currency_code IS DISTINCT FROM NEW.store_currency_code
   OR OLD.total IS DISTINCT FROM NEW.total OR OLD.total_minor IS DISTINCT FROM NEW.total_minor)
EXECUTE FUNCTION report_buckets_order_in();
CREATE TRIGGER report_buckets_order_delete BEFORE DELETE ON orders
FOR EACH ROW EXECUTE FUNCTION report_buckets_order_out();
CREATE TRIGGER report_buckets_status_change AFTER INSERT ON status_history
FOR EACH ROW WHEN (NEW.to_status IN ('FINALIZED', 'CANCELLED')) EXECUTE FUNCTION report_buckets_status_change();
