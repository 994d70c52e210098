-- The reporting views a back-office system reads (docs/schema.md): one
-- row per fetched order, order line, metadata entry and status change,
-- each with its order's code and reference. Amounts come as the exact
-- decimal the mirror holds and, for orders, also as an integer of the
-- currency's minor units, so that SUM is exact in SQLite too (its decimal
-- TEXT would sum through floating point). The integers are columns of
-- orders written by the upsert (store.minorAmount decides them; NULL when
-- no integer says the amount exactly); the store fills them for orders
-- mirrored before this migration, once, right after it (minor_backfill
-- holds the pending mark).

-- +goose Up
-- minor_units: the decimal places the *_minor columns are scaled by (the
-- currency's ISO 4217 minor unit, or ordersync.MaxMinorUnits when the
-- currency is not known).
ALTER TABLE orders ADD COLUMN minor_units INTEGER;
ALTER TABLE orders ADD COLUMN subtotal_minor INTEGER;
ALTER TABLE orders ADD COLUMN shipping_amount_minor INTEGER;
ALTER TABLE orders ADD COLUMN discount_amount_minor INTEGER;
ALTER TABLE orders ADD COLUMN surcharge_amount_minor INTEGER;
ALTER TABLE orders ADD COLUMN total_minor INTEGER;

CREATE TABLE minor_backfill (pending INTEGER NOT NULL);
INSERT INTO minor_backfill (pending) VALUES (1);

CREATE VIEW report_orders AS
SELECT account, order_code, order_id, order_reference, name AS order_name, status,
       store_currency_code AS currency, store_timezone,
       created_at, paid_at, status_changed_at, last_synced_at,
       minor_units,
       subtotal, subtotal_minor,
       shipping_amount, shipping_amount_minor,
       discount_amount, discount_amount_minor,
       surcharge_amount, surcharge_amount_minor,
       total, total_minor,
       buyer_name, buyer_email, buyer_phone,
       payment_authorization_code AS authorization_code
FROM orders
WHERE raw_document IS NOT NULL;

CREATE VIEW report_order_lines AS
SELECT o.account, o.order_code, o.order_reference, o.status,
       o.store_currency_code AS currency, o.created_at,
       li.position + 1 AS line_number, li.product_id, li.sku, li.name,
       li.price, li.promo_price, li.quantity, li.sub_total AS line_subtotal
FROM order_line_items li
JOIN orders o ON o.id = li.order_row;

CREATE VIEW report_status_changes AS
SELECT h.id, o.account, o.order_code, o.order_reference,
       h.from_status, h.to_status, h.at, h.cause
FROM status_history h
JOIN orders o ON o.id = h.order_row;

CREATE VIEW report_order_metadata AS
SELECT o.account, o.order_code, o.order_reference,
       m.position + 1 AS entry_number, m.name, m.value
FROM order_metadata m
JOIN orders o ON o.id = m.order_row;

-- +goose Down
DROP VIEW report_order_metadata;
DROP VIEW report_status_changes;
DROP VIEW report_order_lines;
DROP VIEW report_orders;
DROP TABLE minor_backfill;
ALTER TABLE orders DROP COLUMN total_minor;
ALTER TABLE orders DROP COLUMN surcharge_amount_minor;
ALTER TABLE orders DROP COLUMN discount_amount_minor;
ALTER TABLE orders DROP COLUMN shipping_amount_minor;
ALTER TABLE orders DROP COLUMN subtotal_minor;
ALTER TABLE orders DROP COLUMN minor_units;
