-- The daily report's sums, kept per quarter hour of UTC: every order's
-- figures (internal_report_figures: created, paid, finalized, cancelled
-- never paid, reversed) counted and their total_minor summed per account,
-- quarter hour (Unix seconds / 900) and currency. Every zone's midnight
-- falls on a quarter hour, so a day of any zone is a range of buckets and
-- the report (store.DailyTotals) reads about a hundred rows a day instead
-- of the day's orders. Triggers keep it, in the transaction that writes an
-- order or a status change, whatever writes them (the apply, the
-- backfills); orders whose total no integer says are counted in unsummed,
-- and the report reads those from orders. Internal: not part of the SQL
-- contract (docs/schema.md).

-- +goose Up
-- internal_report_figures is every figure an order counts in, with the
-- instant that places it in a day: created and paid from the order's own
-- times; finalized at its first transition to FINALIZED; cancelled (never
-- paid) at its first transition to CANCELLED, reversed (paid, then
-- cancelled) at its first one at or after its payment. history_id names
-- the status change a figure comes from.
CREATE VIEW internal_report_figures AS
SELECT id AS order_row, account, 'created' AS figure, created_at AS at, NULL AS history_id,
       store_currency_code AS currency, total_minor
FROM orders WHERE total IS NOT NULL AND created_at IS NOT NULL
UNION ALL
SELECT id, account, 'paid', paid_at, NULL, store_currency_code, total_minor
FROM orders WHERE total IS NOT NULL AND paid_at IS NOT NULL
UNION ALL
SELECT o.id, o.account, 'finalized', h.at, h.id, o.store_currency_code, o.total_minor
FROM orders o JOIN status_history h ON h.order_row = o.id
WHERE o.total IS NOT NULL
  AND h.id = (SELECT MIN(e.id) FROM status_history e WHERE e.order_row = o.id AND e.to_status = 'FINALIZED')
UNION ALL
SELECT o.id, o.account, CASE WHEN o.paid_at IS NULL THEN 'cancelled' ELSE 'reversed' END, h.at, h.id,
       o.store_currency_code, o.total_minor
FROM orders o JOIN status_history h ON h.order_row = o.id
WHERE o.total IS NOT NULL
  AND h.id = (SELECT MIN(e.id) FROM status_history e WHERE e.order_row = o.id AND e.to_status = 'CANCELLED'
                                                         AND (o.paid_at IS NULL OR e.at >= o.paid_at));

CREATE TABLE report_buckets (
    account     TEXT    NOT NULL,
    bucket      INTEGER NOT NULL,
    figure      TEXT    NOT NULL,
    currency    TEXT    NOT NULL,
    summed      INTEGER NOT NULL,
    total_minor INTEGER NOT NULL,
    unsummed    INTEGER NOT NULL,
    PRIMARY KEY (account, bucket, figure, currency)
) WITHOUT ROWID;

INSERT INTO report_buckets (account, bucket, figure, currency, summed, total_minor, unsummed)
SELECT account, unixepoch(at) / 900, figure, currency, COUNT(total_minor), COALESCE(SUM(total_minor), 0), COUNT(*) - COUNT(total_minor)
FROM internal_report_figures
GROUP BY account, unixepoch(at) / 900, figure, currency;

-- Each trigger takes an order's figures out before a change and puts them
-- back after it; a status change adds the figure it is the source of.
-- +goose StatementBegin
CREATE TRIGGER report_buckets_order_insert AFTER INSERT ON orders BEGIN
    INSERT INTO report_buckets (account, bucket, figure, currency, summed, total_minor, unsummed)
    SELECT account, unixepoch(at) / 900, figure, currency, total_minor IS NOT NULL, COALESCE(total_minor, 0), total_minor IS NULL
    FROM internal_report_figures WHERE order_row = NEW.id
    ON CONFLICT (account, bucket, figure, currency) DO UPDATE SET summed = summed + excluded.summed,
        total_minor = total_minor + excluded.total_minor, unsummed = unsummed + excluded.unsummed;
END;
-- +goose StatementEnd
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
CREATE TRIGGER report_buckets_status_change AFTER INSERT ON status_history BEGIN
    INSERT INTO report_buckets (account, bucket, figure, currency, summed, total_minor, unsummed)
    SELECT account, unixepoch(at) / 900, figure, currency, total_minor IS NOT NULL, COALESCE(total_minor, 0), total_minor IS NULL
    FROM internal_report_figures WHERE order_row = NEW.order_row AND history_id = NEW.id
    ON CONFLICT (account, bucket, figure, currency) DO UPDATE SET summed = summed + excluded.summed,
        total_minor = total_minor + excluded.total_minor, unsummed = unsummed + excluded.unsummed;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER report_buckets_status_change;
DROP TRIGGER report_buckets_order_delete;
DROP TRIGGER report_buckets_order_after_update;
DROP TRIGGER report_buckets_order_before_update;
DROP TRIGGER report_buckets_order_insert;
DROP TABLE report_buckets;
DROP VIEW internal_report_figures;
