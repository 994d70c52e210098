-- A search by buyer name answers its page from order_name_tokens alone:
-- each word's row carries the order's values that the listing's filters
-- and sorts read, so a common name (thousands of orders) is sorted from
-- the words' rows and only the page's orders are read, instead of every
-- order found. The primary key includes them, so the words' rows are read
-- from the index alone. The upsert writes them with the words; the store
-- fills them for words written before this migration, once, right after it
-- (name_token_backfill holds the pending mark).

-- +goose Up
ALTER TABLE order_name_tokens
    ADD COLUMN status TEXT,
    ADD COLUMN store_currency_code TEXT,
    ADD COLUMN created_at TIMESTAMPTZ,
    ADD COLUMN paid_at TIMESTAMPTZ,
    ADD COLUMN total_key TEXT COLLATE "C";
ALTER TABLE order_name_tokens DROP CONSTRAINT order_name_tokens_pkey;
ALTER TABLE order_name_tokens ADD PRIMARY KEY (account, token, order_row)
    INCLUDE (status, store_currency_code, created_at, paid_at, total_key);

CREATE TABLE name_token_backfill (pending INTEGER NOT NULL);
INSERT INTO name_token_backfill (pending) VALUES (1);

-- +goose Down
DROP TABLE name_token_backfill;
ALTER TABLE order_name_tokens DROP CONSTRAINT order_name_tokens_pkey;
ALTER TABLE order_name_tokens ADD PRIMARY KEY (account, token, order_row);
ALTER TABLE order_name_tokens
    DROP COLUMN total_key,
    DROP COLUMN paid_at,
    DROP COLUMN created_at,
    DROP COLUMN store_currency_code,
    DROP COLUMN status;
