-- An order's document changes are found by its row: (row, time) puts the
-- changes of recent orders together at the index's end, where the key of
-- (store, order code) put every change at a random leaf. The rows written
-- before keep their key and are found by it until the pruner removes them:
-- its index holds only them.

-- +goose Up
ALTER TABLE document_changes ADD COLUMN order_row BIGINT;
CREATE INDEX document_changes_row ON document_changes (order_row, at) WHERE order_row IS NOT NULL;
DROP INDEX document_changes_order;
CREATE INDEX document_changes_order ON document_changes (account, order_code, at) WHERE order_row IS NULL;

-- +goose Down
DROP INDEX document_changes_order;
CREATE INDEX document_changes_order ON document_changes (account, order_code, at);
DROP INDEX document_changes_row;
ALTER TABLE document_changes DROP COLUMN order_row;
