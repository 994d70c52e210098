-- The report's buckets kept for less per write (migration 00018 keeps
-- them). A new order has no status changes yet (its row id is new and
-- orders are never deleted), so of internal_report_figures only its
-- created and paid figures can name it: the insert trigger now counts
-- those two from the new row itself instead of evaluating the view's four
-- branches. A status change is the source of a figure only when it is a
-- FINALIZED or a CANCELLED one, so the other changes no longer run the
-- status change's trigger at all. The buckets hold what they held; the
-- update and delete triggers are unchanged.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION report_buckets_order_new() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO report_buckets (account, bucket, figure, currency, summed, total_minor, unsummed)
    SELECT NEW.account, floor(extract(epoch FROM f.at) / 900)::bigint, f.figure, NEW.store_currency_code,
           (NEW.total_minor IS NOT NULL)::int, COALESCE(NEW.total_minor, 0), (NEW.total_minor IS NULL)::int
    FROM (VALUES ('created', NEW.created_at), ('paid', NEW.paid_at)) AS f (figure, at)
    WHERE f.at IS NOT NULL
    ON CONFLICT (account, bucket, figure, currency) DO UPDATE SET summed = report_buckets.summed + excluded.summed,
        total_minor = report_buckets.total_minor + excluded.total_minor, unsummed = report_buckets.unsummed + excluded.unsummed;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
DROP TRIGGER report_buckets_order_insert ON orders;
CREATE TRIGGER report_buckets_order_insert AFTER INSERT ON orders
FOR EACH ROW WHEN (NEW.total IS NOT NULL) EXECUTE FUNCTION report_buckets_order_new();
DROP TRIGGER report_buckets_status_change ON status_history;
CREATE TRIGGER report_buckets_status_change AFTER INSERT ON status_history
FOR EACH ROW WHEN (NEW.to_status IN ('FINALIZED', 'CANCELLED')) EXECUTE FUNCTION report_buckets_status_change();

-- +goose Down
DROP TRIGGER report_buckets_status_change ON status_history;
CREATE TRIGGER report_buckets_status_change AFTER INSERT ON status_history
FOR EACH ROW EXECUTE FUNCTION report_buckets_status_change();
DROP TRIGGER report_buckets_order_insert ON orders;
CREATE TRIGGER report_buckets_order_insert AFTER INSERT ON orders
FOR EACH ROW EXECUTE FUNCTION report_buckets_order_in();
DROP FUNCTION report_buckets_order_new();
