-- Retention: published outbox messages are found by when they were sent, so
-- that the pruner deletes the oldest without reading the others.

-- +goose Up
CREATE INDEX outbox_sent_at ON outbox (sent_at) WHERE sent_at IS NOT NULL;

-- +goose Down
DROP INDEX outbox_sent_at;
