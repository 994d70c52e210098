-- The lists of a transition range (cancelled, reversed) and the walk of a
-- paid range's page (store.walkFirst) read each order's paid time, created
-- time and store by its row: from this index, a month's orders in a few
-- hundred pages, rather than a page of the table for each (SQLite seeks a
-- row by its integer key whatever index holds the column, so the queries
-- name it). It replaces the index of (row, paid time).

-- +goose Up
CREATE INDEX orders_row_times ON orders (id, paid_at, created_at, account);
DROP INDEX orders_row_paid;

-- +goose Down
CREATE INDEX orders_row_paid ON orders (id, paid_at);
DROP INDEX orders_row_times;
