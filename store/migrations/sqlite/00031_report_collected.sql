-- The Overview's collected figure (admin/console/overview.go) read from
-- report_buckets: internal_report_figures gains 'collected', the orders paid
-- (at paid_at) and PAID or FINALIZED now, so not reversed since. An order's
-- status change is an order change the indexer takes, so a reversal moves
-- the order out of the figure of its paid day. The orders already indexed
-- get theirs here; those waiting in mirror_changes get theirs from the
-- indexer. Internal: not part of the SQL contract (docs/schema.md).

-- +goose Up
DROP VIEW internal_report_figures;
CREATE VIEW internal_report_figures AS
SELECT id AS order_row, account, 'created' AS figure, created_at AS at, NULL AS history_id,
       store_currency_code AS currency, total_minor
FROM orders WHERE total IS NOT NULL AND created_at IS NOT NULL
UNION ALL
SELECT id, account, 'paid', paid_at, NULL, store_currency_code, total_minor
FROM orders WHERE total IS NOT NULL AND paid_at IS NOT NULL
UNION ALL
SELECT id, account, 'collected', paid_at, NULL, store_currency_code, total_minor
FROM orders WHERE total IS NOT NULL AND paid_at IS NOT NULL AND status IN ('PAID', 'FINALIZED')
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

INSERT INTO report_order_figures (order_row, figure, account, bucket, currency, total_minor)
SELECT id, 'collected', account, unixepoch(paid_at) / 900, store_currency_code, total_minor
FROM orders WHERE total IS NOT NULL AND paid_at IS NOT NULL AND status IN ('PAID', 'FINALIZED')
  AND id NOT IN (SELECT order_row FROM mirror_changes);

INSERT INTO report_buckets (account, bucket, figure, currency, summed, total_minor, unsummed)
SELECT account, bucket, figure, currency, COUNT(total_minor), COALESCE(SUM(total_minor), 0), COUNT(*) - COUNT(total_minor)
FROM report_order_figures WHERE figure = 'collected'
GROUP BY account, bucket, figure, currency;

-- +goose Down
DELETE FROM report_buckets WHERE figure = 'collected';
DELETE FROM report_order_figures WHERE figure = 'collected';
DROP VIEW internal_report_figures;
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
