-- Document changes: each fetch that changed an order's mirrored document
-- after its first fetch, when, why, and which fields of the detail changed
-- (their names as a JSON array, never their values, which may be a buyer's
-- data), so that the order's timeline shows them. Pruned with the event log.

-- +goose Up
CREATE TABLE document_changes (
    id         BIGINT    GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account    TEXT      NOT NULL,
    order_code TEXT      NOT NULL,
    at         TIMESTAMPTZ NOT NULL,
    cause      TEXT      NOT NULL,
    fields     TEXT      NOT NULL
);
-- An order's rows, newest first; and the oldest rows, for the pruner.
CREATE INDEX document_changes_order ON document_changes (account, order_code, at);
CREATE INDEX document_changes_at ON document_changes (at);

-- +goose Down
DROP TABLE document_changes;
