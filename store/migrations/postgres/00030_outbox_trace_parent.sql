-- The W3C traceparent of the apply that queued an outbox message, which
-- the relay's span continues and publishes on the message; NULL with
-- tracing off. The payload's bytes are unchanged.

-- +goose Up
ALTER TABLE outbox ADD COLUMN trace_parent TEXT;

-- +goose Down
ALTER TABLE outbox DROP COLUMN trace_parent;
