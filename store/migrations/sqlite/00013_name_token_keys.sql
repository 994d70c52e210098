-- A search by buyer name answers its page from order_name_tokens alone:
-- each word's row carries the order's values that the listing's filters
-- and sorts read, so a common name (thousands of orders) is sorted from
-- the words' rows and only the page's orders are read, instead of every
-- order found. The upsert writes them with the words; the store fills them
-- for words written before this migration, once, right after it
-- (name_token_backfill holds the pending mark).
-- And indexes that answer a listing's page from the index alone: a
-- currency listed by paid time (without statistics SQLite would read every
-- order of a total range to keep one currency), and a total range listed by
-- created or paid time (the totals' index also holds those times, so a
-- rare range is sorted without reading its orders).

-- +goose Up
ALTER TABLE order_name_tokens ADD COLUMN status TEXT;
ALTER TABLE order_name_tokens ADD COLUMN store_currency_code TEXT;
ALTER TABLE order_name_tokens ADD COLUMN created_at TIMESTAMP;
ALTER TABLE order_name_tokens ADD COLUMN paid_at TIMESTAMP;
ALTER TABLE order_name_tokens ADD COLUMN total_key TEXT;

CREATE TABLE name_token_backfill (pending INTEGER NOT NULL);
INSERT INTO name_token_backfill (pending) VALUES (1);

CREATE INDEX orders_account_currency_paid ON orders (account, store_currency_code, paid_at, id) WHERE paid_at IS NOT NULL;
DROP INDEX orders_account_total_id;
CREATE INDEX orders_account_total_id ON orders (account, total_key, id, created_at, paid_at);

-- +goose Down
DROP INDEX orders_account_total_id;
CREATE INDEX orders_account_total_id ON orders (account, total_key, id);
DROP INDEX orders_account_currency_paid;
DROP TABLE name_token_backfill;
ALTER TABLE order_name_tokens DROP COLUMN total_key;
ALTER TABLE order_name_tokens DROP COLUMN paid_at;
ALTER TABLE order_name_tokens DROP COLUMN created_at;
ALTER TABLE order_name_tokens DROP COLUMN store_currency_code;
ALTER TABLE order_name_tokens DROP COLUMN status;
