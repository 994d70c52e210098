-- The lists' counts without a filter count the store's fetched orders (an
-- order only named by a webhook has no document yet): an index of the
-- fetched orders' rows counts them from the index alone, where testing
-- raw_document read each order's row, document and all.

-- +goose Up
CREATE INDEX orders_account_fetched ON orders (account, id) WHERE raw_document IS NOT NULL;

-- +goose Down
DROP INDEX orders_account_fetched;
