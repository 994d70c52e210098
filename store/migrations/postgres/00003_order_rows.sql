-- Line items, metadata, status history and the outbox's uniqueness are keyed
-- by the order's row id instead of its (account, order_code). Order codes are
-- random, so every index keyed by them took each new order on a random page;
-- row ids grow with each new order, so those indexes now take new orders on
-- their last pages. The children drop the account and order code they
-- repeated: the orders row has them.

-- +goose Up
ALTER TABLE orders ADD COLUMN id BIGINT GENERATED ALWAYS AS IDENTITY;
ALTER TABLE orders ADD CONSTRAINT orders_id_key UNIQUE (id);

ALTER TABLE order_line_items ADD COLUMN order_row BIGINT;
UPDATE order_line_items li SET order_row = o.id FROM orders o WHERE o.account = li.account AND o.order_code = li.order_code;
ALTER TABLE order_line_items DROP CONSTRAINT order_line_items_pkey;
ALTER TABLE order_line_items DROP COLUMN account, DROP COLUMN order_code;
ALTER TABLE order_line_items ALTER COLUMN order_row SET NOT NULL,
    ADD PRIMARY KEY (order_row, position),
    ADD FOREIGN KEY (order_row) REFERENCES orders (id) ON DELETE CASCADE;

ALTER TABLE order_metadata ADD COLUMN order_row BIGINT;
UPDATE order_metadata m SET order_row = o.id FROM orders o WHERE o.account = m.account AND o.order_code = m.order_code;
ALTER TABLE order_metadata DROP CONSTRAINT order_metadata_pkey;
ALTER TABLE order_metadata DROP COLUMN account, DROP COLUMN order_code;
ALTER TABLE order_metadata ALTER COLUMN order_row SET NOT NULL,
    ADD PRIMARY KEY (order_row, position),
    ADD FOREIGN KEY (order_row) REFERENCES orders (id) ON DELETE CASCADE;

ALTER TABLE status_history ADD COLUMN order_row BIGINT;
UPDATE status_history h SET order_row = o.id FROM orders o WHERE o.account = h.account AND o.order_code = h.order_code;
DROP INDEX status_history_order;
ALTER TABLE status_history DROP COLUMN account, DROP COLUMN order_code;
ALTER TABLE status_history ALTER COLUMN order_row SET NOT NULL,
    ADD FOREIGN KEY (order_row) REFERENCES orders (id) ON DELETE CASCADE;
CREATE INDEX status_history_order ON status_history (order_row, id);

-- The outbox keeps its account and order code, which the relay reads; its
-- message ids begin with them, so unique per order row is unique.
ALTER TABLE outbox ADD COLUMN order_row BIGINT;
UPDATE outbox x SET order_row = o.id FROM orders o WHERE o.account = x.account AND o.order_code = x.order_code;
ALTER TABLE outbox DROP CONSTRAINT outbox_msg_id_key;
ALTER TABLE outbox ALTER COLUMN order_row SET NOT NULL,
    ADD CONSTRAINT outbox_order_row_msg_id_key UNIQUE (order_row, msg_id);

-- +goose Down
ALTER TABLE outbox DROP CONSTRAINT outbox_order_row_msg_id_key;
ALTER TABLE outbox DROP COLUMN order_row;
ALTER TABLE outbox ADD CONSTRAINT outbox_msg_id_key UNIQUE (msg_id);

ALTER TABLE status_history ADD COLUMN account TEXT, ADD COLUMN order_code TEXT;
UPDATE status_history h SET account = o.account, order_code = o.order_code FROM orders o WHERE o.id = h.order_row;
DROP INDEX status_history_order;
ALTER TABLE status_history DROP COLUMN order_row;
ALTER TABLE status_history ALTER COLUMN account SET NOT NULL, ALTER COLUMN order_code SET NOT NULL,
    ADD FOREIGN KEY (account, order_code) REFERENCES orders (account, order_code) ON DELETE CASCADE;
CREATE INDEX status_history_order ON status_history (account, order_code, id);

ALTER TABLE order_metadata ADD COLUMN account TEXT, ADD COLUMN order_code TEXT;
UPDATE order_metadata m SET account = o.account, order_code = o.order_code FROM orders o WHERE o.id = m.order_row;
ALTER TABLE order_metadata DROP CONSTRAINT order_metadata_pkey;
ALTER TABLE order_metadata DROP COLUMN order_row;
ALTER TABLE order_metadata ALTER COLUMN account SET NOT NULL, ALTER COLUMN order_code SET NOT NULL,
    ADD PRIMARY KEY (account, order_code, position),
    ADD FOREIGN KEY (account, order_code) REFERENCES orders (account, order_code) ON DELETE CASCADE;

ALTER TABLE order_line_items ADD COLUMN account TEXT, ADD COLUMN order_code TEXT;
UPDATE order_line_items li SET account = o.account, order_code = o.order_code FROM orders o WHERE o.id = li.order_row;
ALTER TABLE order_line_items DROP CONSTRAINT order_line_items_pkey;
ALTER TABLE order_line_items DROP COLUMN order_row;
ALTER TABLE order_line_items ALTER COLUMN account SET NOT NULL, ALTER COLUMN order_code SET NOT NULL,
    ADD PRIMARY KEY (account, order_code, position),
    ADD FOREIGN KEY (account, order_code) REFERENCES orders (account, order_code) ON DELETE CASCADE;

ALTER TABLE orders DROP CONSTRAINT orders_id_key;
ALTER TABLE orders DROP COLUMN id;
