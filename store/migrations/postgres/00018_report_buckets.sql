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
SELECT id AS order_row, account, 'created' AS figure, created_at AS at, NULL::bigint AS history_id,
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
    bucket      BIGINT  NOT NULL,
    figure      TEXT    NOT NULL,
    currency    TEXT    NOT NULL,
    summed      BIGINT  NOT NULL,
    total_minor BIGINT  NOT NULL,
    unsummed    BIGINT  NOT NULL,
    PRIMARY KEY (account, bucket, figure, currency)
);

INSERT INTO report_buckets (account, bucket, figure, currency, summed, total_minor, unsummed)
SELECT account, floor(extract(epoch FROM at) / 900)::bigint, figure, currency,
       COUNT(total_minor), COALESCE(SUM(total_minor), 0), COUNT(*) - COUNT(total_minor)
FROM internal_report_figures
GROUP BY 1, 2, 3, 4;

-- report_buckets_add adds (sign 1) or takes out (sign -1) an order's
-- figures, or only the one a status change is the source of.
-- +goose StatementBegin
CREATE FUNCTION report_buckets_add(row_id BIGINT, change_id BIGINT, sign INTEGER) RETURNS void LANGUAGE sql AS $$
INSERT INTO report_buckets (account, bucket, figure, currency, summed, total_minor, unsummed)
SELECT account, floor(extract(epoch FROM at) / 900)::bigint, figure, currency,
       sign * (total_minor IS NOT NULL)::int, sign * COALESCE(total_minor, 0), sign * (total_minor IS NULL)::int
FROM internal_report_figures WHERE order_row = row_id AND (change_id IS NULL OR history_id = change_id)
ON CONFLICT (account, bucket, figure, currency) DO UPDATE SET summed = report_buckets.summed + excluded.summed,
    total_minor = report_buckets.total_minor + excluded.total_minor, unsummed = report_buckets.unsummed + excluded.unsummed
$$;
-- +goose StatementEnd

-- Each trigger takes an order's figures out before a change and puts them
-- back after it; a status change adds the figure it is the source of.
-- +goose StatementBegin
CREATE FUNCTION report_buckets_order_out() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM report_buckets_add(OLD.id, NULL, -1);
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION report_buckets_order_in() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM report_buckets_add(NEW.id, NULL, 1);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION report_buckets_status_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM report_buckets_add(NEW.order_row, NEW.id, 1);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER report_buckets_order_insert AFTER INSERT ON orders
FOR EACH ROW EXECUTE FUNCTION report_buckets_order_in();
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
FOR EACH ROW EXECUTE FUNCTION report_buckets_status_change();

-- +goose Down
DROP TRIGGER report_buckets_status_change ON status_history;
DROP TRIGGER report_buckets_order_delete ON orders;
DROP TRIGGER report_buckets_order_after_update ON orders;
DROP TRIGGER report_buckets_order_before_update ON orders;
DROP TRIGGER report_buckets_order_insert ON orders;
DROP FUNCTION report_buckets_status_change();
DROP FUNCTION report_buckets_order_in();
DROP FUNCTION report_buckets_order_out();
DROP FUNCTION report_buckets_add(BIGINT, BIGINT, INTEGER);
DROP TABLE report_buckets;
DROP VIEW internal_report_figures;
