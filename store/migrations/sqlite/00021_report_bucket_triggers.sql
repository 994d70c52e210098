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
DROP TRIGGER report_buckets_order_insert;
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
DROP TRIGGER report_buckets_status_change;
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

-- +goose Down
DROP TRIGGER report_buckets_status_change;
-- +goose StatementBegin
CREATE TRIGGER report_buckets_status_change AFTER INSERT ON status_history BEGIN
    INSERT INTO report_buckets (account, bucket, figure, currency, summed, total_minor, unsummed)
    SELECT account, unixepoch(at) / 900, figure, currency, total_minor IS NOT NULL, COALESCE(total_minor, 0), total_minor IS NULL
    FROM internal_report_figures WHERE order_row = NEW.order_row AND history_id = NEW.id
    ON CONFLICT (account, bucket, figure, currency) DO UPDATE SET summed = summed + excluded.summed,
        total_minor = total_minor + excluded.total_minor, unsummed = unsummed + excluded.unsummed;
END;
-- +goose StatementEnd
DROP TRIGGER report_buckets_order_insert;
-- +goose StatementBegin
CREATE TRIGGER report_buckets_order_insert AFTER INSERT ON orders BEGIN
    INSERT INTO report_buckets (account, bucket, figure, currency, summed, total_minor, unsummed)
    SELECT account, unixepoch(at) / 900, figure, currency, total_minor IS NOT NULL, COALESCE(total_minor, 0), total_minor IS NULL
    FROM internal_report_figures WHERE order_row = NEW.id
    ON CONFLICT (account, bucket, figure, currency) DO UPDATE SET summed = summed + excluded.summed,
        total_minor = total_minor + excluded.total_minor, unsummed = unsummed + excluded.unsummed;
END;
-- +goose StatementEnd
