-- When ordersync learned an order was paid, and when its status last
-- changed. The service gives no payment time: paid_at is the receipt of the
-- earliest webhook that announced the payment, else the fetch that first saw
-- the order PAID (or FINALIZED when PAID was never seen); the store writes it
-- once. Orders mirrored before this migration get both from their status
-- history, whose times are those of the fetches that saw each transition.

-- +goose Up
ALTER TABLE orders ADD COLUMN paid_at TIMESTAMP;
ALTER TABLE orders ADD COLUMN status_changed_at TIMESTAMP;
UPDATE orders SET
    paid_at = COALESCE(h.first_paid, h.first_finalized),
    status_changed_at = h.last_change
FROM (
    SELECT order_row,
           MIN(CASE WHEN to_status = 'PAID' THEN at END) AS first_paid,
           MIN(CASE WHEN to_status = 'FINALIZED' THEN at END) AS first_finalized,
           MAX(at) AS last_change
    FROM status_history GROUP BY order_row
) AS h
WHERE orders.id = h.order_row;
-- Orders by payment time, of all accounts and of one.
CREATE INDEX orders_paid_at ON orders (paid_at DESC) WHERE paid_at IS NOT NULL;
CREATE INDEX orders_account_paid_at ON orders (account, paid_at DESC) WHERE paid_at IS NOT NULL;
-- Cancellations and finalizations by time, for the daily totals. History
-- times only grow, so new rows land on the index's last pages.
CREATE INDEX status_history_to_status_at ON status_history (to_status, at);

-- +goose Down
DROP INDEX status_history_to_status_at;
DROP INDEX orders_account_paid_at;
DROP INDEX orders_paid_at;
ALTER TABLE orders DROP COLUMN status_changed_at;
ALTER TABLE orders DROP COLUMN paid_at;
