-- The listing's walks answer a status filter from the index they walk:
-- the store's created, paid and total indexes hold the order's status, so
-- a status (collected, cancelled, pending) in any sort, with a created or
-- paid range, and its count up to the console's bound, read no order's row
-- (the collected orders paid in a month were 47,000 rows read one by one);
-- the paid index holds the created time too, the default sort's key.

-- +goose Up
DROP INDEX orders_account_created_id;
CREATE INDEX orders_account_created_id ON orders (account, created_at, id, status);
DROP INDEX orders_account_paid_id;
CREATE INDEX orders_account_paid_id ON orders (account, paid_at, id, status, created_at) WHERE paid_at IS NOT NULL;
DROP INDEX orders_account_total_id;
CREATE INDEX orders_account_total_id ON orders (account, total_key, id, created_at, paid_at, status);

-- +goose Down
DROP INDEX orders_account_total_id;
CREATE INDEX orders_account_total_id ON orders (account, total_key, id, created_at, paid_at);
DROP INDEX orders_account_paid_id;
CREATE INDEX orders_account_paid_id ON orders (account, paid_at, id) WHERE paid_at IS NOT NULL;
DROP INDEX orders_account_created_id;
CREATE INDEX orders_account_created_id ON orders (account, created_at, id);
