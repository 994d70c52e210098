-- The listing's first page of a paid-time range, in the default sort by
-- created time, from an index alone: the daily totals' paid index also
-- holds the orders' created times and row ids, where before the database
-- read the row of each of the range's orders (a day's 1,500) to sort them.
-- An index widened, none added.

-- +goose Up
DROP INDEX orders_report_paid;
CREATE INDEX orders_report_paid ON orders (account, paid_at) INCLUDE (store_currency_code, total_minor, total, created_at, id)
    WHERE paid_at IS NOT NULL;

-- +goose Down
DROP INDEX orders_report_paid;
CREATE INDEX orders_report_paid ON orders (account, paid_at) INCLUDE (store_currency_code, total_minor, total) WHERE paid_at IS NOT NULL;
