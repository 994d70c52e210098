-- The delivery log: how the delivery of each order event to each HTTP
-- endpoint last ended, so that an order's event log shows its deliveries.
-- One row per event and endpoint (a webhook-id names both), replaced when
-- the same delivery ends again: attempts are counted, not stored, so an
-- order's rows stay bounded however often its events are retried.

-- +goose Up
CREATE TABLE delivery_log (
    webhook_id   TEXT        PRIMARY KEY,
    endpoint_id  TEXT        NOT NULL,
    event        TEXT        NOT NULL,
    account      TEXT        NOT NULL,
    order_code   TEXT        NOT NULL,
    order_status TEXT        NOT NULL DEFAULT '',
    outcome      TEXT        NOT NULL,
    attempts     INTEGER     NOT NULL,
    status       INTEGER     NOT NULL DEFAULT 0,
    detail       TEXT        NOT NULL DEFAULT '',
    ended_at     TIMESTAMPTZ NOT NULL
);
-- An order's rows, newest first; and the oldest rows, for the pruner.
CREATE INDEX delivery_log_order ON delivery_log (account, order_code, ended_at);
CREATE INDEX delivery_log_ended_at ON delivery_log (ended_at);

-- +goose Down
DROP TABLE delivery_log;
