-- The event log's rows of fetched orders keyed by the order's row id. An
-- order code is random, so event_log_order_code took every new order's
-- event on a random page, and a batch rewrote one page of it per order;
-- row ids grow, so event_log_order_row takes a batch's new orders' events
-- on its last pages. The apply sets order_row on the events of the orders
-- it writes; the events logged without an order row (before their order
-- was fetched, never fetched, and every row written before this
-- migration) stay in the code's index, so an order's events are those of
-- its row and those of its code without a row. Orders are never deleted.

-- +goose Up
ALTER TABLE event_log ADD COLUMN order_row BIGINT;
DROP INDEX event_log_order_code;
CREATE INDEX event_log_order_code ON event_log (account, order_code, received_at DESC) WHERE order_code <> '' AND order_row IS NULL;
CREATE INDEX event_log_order_row ON event_log (order_row, received_at DESC) WHERE order_row IS NOT NULL;

-- +goose Down
DROP INDEX event_log_order_row;
DROP INDEX event_log_order_code;
CREATE INDEX event_log_order_code ON event_log (account, order_code, received_at DESC) WHERE order_code <> '';
ALTER TABLE event_log DROP COLUMN order_row;
