-- Search that finds what a caller says: the buyer's email and the order's
-- reference regardless of case, the reference by its beginning, and the
-- buyer's phone however it is written. Each is a key the store computes
-- (store.identifierKeys) and an index seeks: the email and reference in
-- lower case, the phone as ordersync.PhoneKey reads it in the store's
-- country. The store fills them for orders mirrored before this migration,
-- once, right after it (identifier_backfill holds the pending mark); the
-- upsert keeps them in step from then on. The keys' indexes replace the
-- exact email and phone ones; the reference's exact index stays, for
-- resolving a webhook's orderReference.

-- +goose Up
ALTER TABLE orders ADD COLUMN buyer_email_key TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE orders ADD COLUMN buyer_phone_key TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE orders ADD COLUMN order_reference_key TEXT COLLATE "C" NOT NULL DEFAULT '';

CREATE TABLE identifier_backfill (pending INTEGER NOT NULL);
INSERT INTO identifier_backfill (pending) VALUES (1);

-- A prefix of the reference is a range of its key: the "C" collation
-- compares UTF-8 bytes, the order of code points, in an index and a query alike.
CREATE INDEX orders_buyer_email_key ON orders (account, buyer_email_key) WHERE buyer_email_key <> '';
CREATE INDEX orders_buyer_phone_key ON orders (account, buyer_phone_key) WHERE buyer_phone_key <> '';
CREATE INDEX orders_order_reference_key ON orders (account, order_reference_key) WHERE order_reference_key <> '';
DROP INDEX orders_buyer_email;
DROP INDEX orders_buyer_phone;

-- +goose Down
CREATE INDEX orders_buyer_phone ON orders (account, buyer_phone) WHERE buyer_phone <> '';
CREATE INDEX orders_buyer_email ON orders (account, buyer_email) WHERE buyer_email <> '';
DROP INDEX orders_order_reference_key;
DROP INDEX orders_buyer_phone_key;
DROP INDEX orders_buyer_email_key;
DROP TABLE identifier_backfill;
ALTER TABLE orders DROP COLUMN order_reference_key;
ALTER TABLE orders DROP COLUMN buyer_phone_key;
ALTER TABLE orders DROP COLUMN buyer_email_key;
