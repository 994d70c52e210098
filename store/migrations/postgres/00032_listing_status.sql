-- The listing's walks answer a status filter from the index they walk:
-- the store's paid and total indexes hold the order's status (the created
-- one has the status index beside it, migration 19), so a status
-- (collected, cancelled, pending) by paid time or total, with a paid
-- range, and its count up to the console's bound, read no order's row;
-- the paid index holds the created time too, the default sort's key.

-- +goose Up
DROP INDEX orders_account_paid_id;
CREATE INDEX orders_account_paid_id ON orders (account, paid_at, id) INCLUDE (status, created_at) WHERE paid_at IS NOT NULL;
DROP INDEX orders_account_total_id;
CREATE INDEX orders_account_total_id ON orders (account, total_key, id) INCLUDE (status);

-- +goose Down
DROP INDEX orders_account_total_id;
CREATE INDEX orders_account_total_id ON orders (account, total_key, id);
DROP INDEX orders_account_paid_id;
CREATE INDEX orders_account_paid_id ON orders (account, paid_at, id) WHERE paid_at IS NOT NULL;
