-- The back office's read side (the name words of order_name_tokens and
-- report_buckets) is kept by the indexer (store/indexer.go) off the apply
-- transaction: the apply appends one row per changed order to
-- mirror_changes, and the indexer takes them in id order, a batch per
-- transaction, and deletes what it took. report_order_figures holds what
-- each order counts in report_buckets, so that the indexer takes out what
-- an order counted before adding what it counts now. indexer_position is
-- the last change indexed and when. Internal: not part of the SQL contract
-- (docs/schema.md).

-- +goose Up
DROP TRIGGER report_buckets_status_change;
DROP TRIGGER report_buckets_order_delete;
DROP TRIGGER report_buckets_order_after_update;
DROP TRIGGER report_buckets_order_before_update;
DROP TRIGGER report_buckets_order_insert;

CREATE TABLE mirror_changes (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    order_row INTEGER   NOT NULL,
    at        TIMESTAMP NOT NULL
);

CREATE TABLE report_order_figures (
    order_row   INTEGER NOT NULL,
    figure      TEXT    NOT NULL,
    account     TEXT    NOT NULL,
    bucket      INTEGER NOT NULL,
    currency    TEXT    NOT NULL,
    total_minor INTEGER,
    PRIMARY KEY (order_row, figure)
) WITHOUT ROWID;

INSERT INTO report_order_figures (order_row, figure, account, bucket, currency, total_minor)
SELECT order_row, figure, account, unixepoch(at) / 900, currency, total_minor FROM internal_report_figures;

CREATE TABLE indexer_position (
    one        INTEGER PRIMARY KEY CHECK (one = 1),
    position   INTEGER   NOT NULL,
    indexed_at TIMESTAMP
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
SELECT account, unixepoch(at) / 900, figure, currency, COUNT(total_minor), COALESCE(SUM(total_minor), 0), COUNT(*) - COUNT(total_minor)
FROM internal_report_figures
GROUP BY account, unixepoch(at) / 900, figure, currency;
-- +goose StatementBegin
CREATE TRIGGER report_buckets_order_before_update BEFORE UPDATE ON orders
WHEN OLD.account IS NOT NEW.account OR OLD.created_at IS NOT NEW.created_at OR OLD.paid_at IS NOT NEW.paid_at
  OR OLD.store_currency_code IS NOT NEW.store_currency_code OR OLD.total IS NOT NEW.total OR OLD.total_minor IS NOT NEW.total_minor
BEGIN
    INSERT INTO report_buckets (account, bucket, figure, currency, summed, total_minor, unsummed)
    SELECT account, unixepoch(at) / 900, figure, currency, -(total_minor IS NOT NULL), -COALESCE(total_minor, 0), -(total_minor IS NULL)
    FROM internal_report_figures WHERE order_row = OLD.id
    ON CONFLICT (account, bucket, figure, currency) DO UPDATE SET summed = summed + excluded.summed,
        total_minor = total_minor + excluded.total_minor, unsummed = unsummed + excluded.unsummed;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER report_buckets_order_after_update AFTER UPDATE ON orders
WHEN OLD.account IS NOT NEW.account OR OLD.created_at IS NOT NEW.created_at OR OLD.paid_at IS NOT NEW.paid_at
  OR OLD.store_currency_code IS NOT NEW.store_currency_code OR OLD.total IS NOT NEW.total OR OLD.total_minor IS NOT NEW.total_minor
BEGIN
    INSERT INTO report_buckets (account, bucket, figure, currency, summed, total_minor, unsummed)
    SELECT account, unixepoch(at) / 900, figure, currency, total_minor IS NOT NULL, COALESCE(total_minor, 0), total_minor IS NULL
    FROM internal_report_figures WHERE order_row = NEW.id
    ON CONFLICT (account, bucket, figure, currency) DO UPDATE SET summed = summed + excluded.summed,
        total_minor = total_minor + excluded.total_minor, unsummed = unsummed + excluded.unsummed;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER report_buckets_order_delete BEFORE DELETE ON orders BEGIN
    INSERT INTO report_buckets (account, bucket, figure, currency, summed, total_minor, unsummed)
    SELECT account, unixepoch(at) / 900, figure, currency, -(total_minor IS NOT NULL), -COALESCE(total_minor, 0), -(total_minor IS NULL)
    FROM internal_report_figures WHERE order_row = OLD.id
    ON CONFLICT (account, bucket, figure, currency) DO UPDATE SET summed = summed + excluded.summed,
        total_minor = total_minor + excluded.total_minor, unsummed = unsummed + excluded.unsummed;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER report_buckets_order_insert AFTER INSERT ON orders WHEN NEW.total IS NOT NULL BEGIN
    INSERT INTO report_buckets (account, bucket, figure, currency, summed, total_minor, unsummed)
    SELECT NEW.account, unixepoch(f.at) / 900, f.figure, NEW.store_currency_code,
           NEW.total_minor IS NOT NULL, COALESCE(NEW.total_minor, 0), NEW.total_minor IS NULL
    FROM (SELECT 'created' AS figure, NEW.created_at AS at UNION ALL SELECT 'paid', NEW.paid_at) f
    WHERE f.at IS NOT NULL
    ON CONFLICT (account, bucket, figure, currency) DO UPDATE SET summed = summed + excluded.summed,
        total_minor = total_minor + excluded.total_minor, unsummed = unsummed + excluded.unsummed;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER report_buckets_status_change AFTER INSERT ON status_history
WHEN NEW.to_status IN ('FINALIZED', 'CANCELLED')
BEGIN
    INSERT INTO report_buckets (account, bucket, figure, currency, summed, total_minor, unsummed)
    SELECT account, unixepoch(at) / 900, figure, currency, total_minor IS NOT NULL, COALESCE(total_minor, 0), total_minor IS NULL
    FROM internal_report_figures WHERE order_row = NEW.order_row AND history_id = NEW.id
    ON CONFLICT (account, bucket, figure, currency) DO UPDATE SET summed = summed + excluded.summed,
        total_minor = total_minor + excluded.total_minor, unsummed = unsummed + excluded.unsummed;
END;
-- +goose StatementEnd
