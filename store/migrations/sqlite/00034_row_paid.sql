-- The lists of a transition range (cancelled, reversed) read each
-- cancellation's order's paid time: from this index, a month's orders in a
-- few hundred pages, rather than a page of the table for each
-- (store.countedSQL names it, since SQLite seeks a row by its integer key
-- whatever index holds the column).

-- +goose Up
CREATE INDEX orders_row_paid ON orders (id, paid_at);

-- +goose Down
DROP INDEX orders_row_paid;
