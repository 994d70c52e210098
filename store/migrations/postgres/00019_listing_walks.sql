-- The listing's first page from a walk of an index in the page's order,
-- reading only what the page needs, where before the database read and
-- sorted everything the filter selected:
-- - a buyer-name word's rows by created time (the default sort): the
--   words' index that the search reads holds each word's orders in created
--   order, so a name that thousands of orders share yields its newest 100
--   first. The primary key keeps only what makes a word's row unique, since
--   the new index holds the copied values.
-- - a status in a created range, by any sort: the status index leads with
--   the account and holds the row id and the total key, so the range is
--   read from the index alone (a week's finalized orders, not the week's
--   orders' rows).
-- - a total range in the default sort: the created index holds the total
--   key, so walking it tests each order's total without reading its row.
-- Two indexes widened and one trimmed; one added on the words of paid
-- orders' buyer names.

-- +goose Up
CREATE INDEX order_name_tokens_created ON order_name_tokens (account, token, created_at, order_row)
    INCLUDE (status, store_currency_code, paid_at, total_key);
ALTER TABLE order_name_tokens DROP CONSTRAINT order_name_tokens_pkey;
ALTER TABLE order_name_tokens ADD PRIMARY KEY (account, token, order_row);
DROP INDEX orders_status_created_at;
CREATE INDEX orders_status_created_at ON orders (account, status, created_at, id) INCLUDE (total_key);
DROP INDEX orders_account_created_id;
CREATE INDEX orders_account_created_id ON orders (account, created_at, id) INCLUDE (total_key);

-- +goose Down
DROP INDEX orders_account_created_id;
CREATE INDEX orders_account_created_id ON orders (account, created_at, id);
DROP INDEX orders_status_created_at;
CREATE INDEX orders_status_created_at ON orders (status, created_at DESC);
ALTER TABLE order_name_tokens DROP CONSTRAINT order_name_tokens_pkey;
ALTER TABLE order_name_tokens ADD PRIMARY KEY (account, token, order_row)
    INCLUDE (status, store_currency_code, created_at, paid_at, total_key);
DROP INDEX order_name_tokens_created;
