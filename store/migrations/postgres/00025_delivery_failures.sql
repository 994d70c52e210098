-- Every failed end of a delivery, beside the delivery log's latest end:
-- the dispatcher giving up after its retries, each replay that failed
-- again, so that an order's timeline shows each failure, when, at which
-- endpoint and with what answer. Deliveries that arrive are not kept here
-- (the log has the latest), so the table grows with failures only and is
-- pruned with the log.

-- +goose Up
CREATE TABLE delivery_failures (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id   TEXT        NOT NULL,
    endpoint_id  TEXT        NOT NULL,
    event        TEXT        NOT NULL,
    account      TEXT        NOT NULL,
    order_code   TEXT        NOT NULL,
    outcome      TEXT        NOT NULL,
    attempts     INTEGER     NOT NULL,
    status       INTEGER     NOT NULL DEFAULT 0,
    detail       TEXT        NOT NULL DEFAULT '',
    ended_at     TIMESTAMPTZ NOT NULL
);
-- An order's failures; and the oldest, for the pruner.
CREATE INDEX delivery_failures_order ON delivery_failures (account, order_code, ended_at);
CREATE INDEX delivery_failures_ended_at ON delivery_failures (ended_at);

-- +goose Down
DROP TABLE delivery_failures;
