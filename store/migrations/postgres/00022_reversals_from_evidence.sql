-- Reversals from evidence (docs/back-office.md, "Reversals"): an order
-- that ended CANCELLED after evidence of a payment (an authorization code
-- or a buyer in its mirrored row, a payment webhook in its event log) is a
-- reversed payment, though no fetch saw it PAID. Mirrors made before this
-- left its paid_at empty, so the daily totals counted it cancelled: it
-- gets the paid time of its first evidence, the earliest payment webhook's
-- receipt when that came before its first cancellation, else that
-- cancellation (the fetch that saw the payment's document). The report's
-- buckets follow through their update triggers; the name words repeat
-- paid_at. Evidence only in an earlier document, which the row no longer
-- holds, cannot be known here.

-- +goose Up
UPDATE orders SET paid_at = r.paid_at
FROM (
    SELECT o.id AS order_row,
           CASE WHEN w.first_hook IS NOT NULL AND w.first_hook < c.first_cancel THEN w.first_hook ELSE c.first_cancel END AS paid_at
    FROM orders o
    JOIN (SELECT order_row, MIN(at) AS first_cancel FROM status_history WHERE to_status = 'CANCELLED' GROUP BY order_row) c
      ON c.order_row = o.id
    LEFT JOIN (
        SELECT hooks.order_row, MIN(hooks.received_at) AS first_hook FROM (
            SELECT e.order_row, e.received_at FROM event_log e
            WHERE e.order_row IS NOT NULL AND e.type IN ('SuccessPayment', 'Finalized')
            UNION ALL
            SELECT x.id AS order_row, e.received_at FROM event_log e JOIN orders x ON x.account = e.account AND x.order_code = e.order_code
            WHERE e.order_row IS NULL AND e.order_code <> '' AND e.type IN ('SuccessPayment', 'Finalized')
        ) AS hooks GROUP BY hooks.order_row
    ) w ON w.order_row = o.id
    WHERE o.status = 'CANCELLED' AND o.paid_at IS NULL
      AND (o.payment_authorization_code <> '' OR o.buyer_name <> '' OR o.buyer_email <> '' OR o.buyer_phone <> ''
           OR w.first_hook IS NOT NULL)
) AS r
WHERE orders.id = r.order_row;
UPDATE order_name_tokens SET paid_at = o.paid_at
FROM orders o
WHERE o.id = order_name_tokens.order_row AND o.status = 'CANCELLED' AND o.paid_at IS NOT NULL AND order_name_tokens.paid_at IS NULL;

-- +goose Down
-- The paid times stay: they are what the rule says, and an older build
-- reads them as it reads any paid time.
SELECT 1;
