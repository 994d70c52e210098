-- The daily totals read from indexes alone: one per figure the orders'
-- own columns place in a day (created, paid), holding every column the
-- report reads, so that the database sums a range's orders per quarter
-- hour and currency (store.DailyTotals) without reading the orders' rows.
-- total_minor is summed; total is read for the orders whose total no
-- integer says exactly. And the accounts' orders by row id: the report's
-- default zone is that of the account's latest order, which SQLite found
-- by reading every order of the account.

-- +goose Up
CREATE INDEX orders_report_created ON orders (account, created_at, store_currency_code, total_minor, total);
CREATE INDEX orders_report_paid ON orders (account, paid_at, store_currency_code, total_minor, total) WHERE paid_at IS NOT NULL;
CREATE INDEX orders_account_id ON orders (account, id);

-- +goose Down
DROP INDEX orders_account_id;
DROP INDEX orders_report_paid;
DROP INDEX orders_report_created;
