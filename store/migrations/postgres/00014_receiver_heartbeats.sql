-- The receiver's uptime, recorded in the mirror: each receiver process
-- writes one row per account every few seconds (when it started, when it
-- last beat, and how many webhooks it accepted, answered 503 or refused),
-- so a reconciler in any process, or after a restart, knows when no
-- receiver was listening and whether webhooks were being lost. And each
-- account's evidence of lost webhooks, which the schedule reads whenever
-- it sets an order's next check (dense while it holds).

-- +goose Up
CREATE TABLE receiver_heartbeats (
    receiver_id TEXT   NOT NULL,
    account     TEXT   NOT NULL,
    started_at  TIMESTAMPTZ NOT NULL,
    beat_at     TIMESTAMPTZ NOT NULL,
    accepted    BIGINT NOT NULL DEFAULT 0,
    unavailable BIGINT NOT NULL DEFAULT 0,
    refused     BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (receiver_id, account)
);
CREATE INDEX receiver_heartbeats_beat ON receiver_heartbeats (account, beat_at);

CREATE TABLE dense_checks (
    account      TEXT PRIMARY KEY,
    active_since TIMESTAMPTZ NOT NULL,
    dense_until  TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE dense_checks;
DROP TABLE receiver_heartbeats;
