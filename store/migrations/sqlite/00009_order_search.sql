-- Finding any order: indexes for the listing's filters and sorts, the words
-- of buyers' names, and a key that sorts totals as numbers (amounts are TEXT
-- here, which sort as strings). The store fills both for orders mirrored
-- before this migration, once, right after it (search_backfill holds the
-- pending mark); the upsert keeps them in step from then on.

-- +goose Up
-- total_key: the total as fixed-width text whose order is the numbers'
-- (store.totalKey); NULL when the order has no total.
ALTER TABLE orders ADD COLUMN total_key TEXT;

-- One row per distinct word of an order's buyer name, folded as
-- ordersync.NameTokens folds it (lower case, no accents), found by prefix.
CREATE TABLE order_name_tokens (
    account   TEXT    NOT NULL,
    token     TEXT    NOT NULL,
    order_row INTEGER NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    PRIMARY KEY (account, token, order_row)
) WITHOUT ROWID;
CREATE INDEX order_name_tokens_order ON order_name_tokens (order_row);

CREATE TABLE search_backfill (pending INTEGER NOT NULL);
INSERT INTO search_backfill (pending) VALUES (1);

-- Keyset pages order by (value, id): the indexes end with id so that a page
-- starts where the last one stopped without sorting.
CREATE INDEX orders_account_created_id ON orders (account, created_at, id);
DROP INDEX orders_account_created_at;
CREATE INDEX orders_account_paid_id ON orders (account, paid_at, id) WHERE paid_at IS NOT NULL;
DROP INDEX orders_account_paid_at;
CREATE INDEX orders_account_total_id ON orders (account, total_key, id);
CREATE INDEX orders_account_currency_created ON orders (account, store_currency_code, created_at, id);
CREATE INDEX orders_buyer_email ON orders (account, buyer_email) WHERE buyer_email <> '';
CREATE INDEX orders_buyer_phone ON orders (account, buyer_phone) WHERE buyer_phone <> '';
CREATE INDEX orders_authorization_code ON orders (account, payment_authorization_code) WHERE payment_authorization_code <> '';

-- +goose Down
DROP INDEX orders_authorization_code;
DROP INDEX orders_buyer_phone;
DROP INDEX orders_buyer_email;
DROP INDEX orders_account_currency_created;
DROP INDEX orders_account_total_id;
CREATE INDEX orders_account_paid_at ON orders (account, paid_at DESC) WHERE paid_at IS NOT NULL;
DROP INDEX orders_account_paid_id;
CREATE INDEX orders_account_created_at ON orders (account, created_at DESC);
DROP INDEX orders_account_created_id;
DROP TABLE search_backfill;
DROP TABLE order_name_tokens;
ALTER TABLE orders DROP COLUMN total_key;
