-- HTTP endpoints that receive order events, shared by every process, and the
-- deliveries they refused for good. Secrets are stored as given: the store
-- must sign with them, so they cannot be hashed.

-- +goose Up
-- The status a change left, so that an order event says from and to.
ALTER TABLE outbox ADD COLUMN from_status TEXT NOT NULL DEFAULT '';

CREATE TABLE endpoints (
    id                    TEXT      PRIMARY KEY,
    url                   TEXT      NOT NULL,
    events                TEXT      NOT NULL,
    description           TEXT      NOT NULL DEFAULT '',
    source                TEXT      NOT NULL,
    disabled              BOOLEAN NOT NULL DEFAULT FALSE,
    disabled_reason       TEXT      NOT NULL DEFAULT '',
    secret                TEXT      NOT NULL,
    previous_secret       TEXT      NOT NULL DEFAULT '',
    rate_per_second       DOUBLE PRECISION NOT NULL DEFAULT 0,
    previous_secret_until TIMESTAMPTZ,
    created_at            TIMESTAMPTZ NOT NULL,
    updated_at            TIMESTAMPTZ NOT NULL
);

CREATE TABLE delivery_dead_letters (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id  TEXT      NOT NULL,
    event        TEXT      NOT NULL,
    webhook_id   TEXT      NOT NULL,
    account      TEXT      NOT NULL DEFAULT '',
    order_code   TEXT      NOT NULL DEFAULT '',
    attempts     INTEGER   NOT NULL,
    last_status  INTEGER   NOT NULL DEFAULT 0,
    last_body    TEXT      NOT NULL DEFAULT '',
    last_error   TEXT      NOT NULL DEFAULT '',
    body         BYTEA      NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    replayed_at  TIMESTAMPTZ,
    replay_count INTEGER   NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX delivery_dead_letters_pending ON delivery_dead_letters (endpoint_id, webhook_id) WHERE replayed_at IS NULL;
CREATE INDEX delivery_dead_letters_endpoint ON delivery_dead_letters (endpoint_id, id);

-- +goose Down
DROP TABLE delivery_dead_letters;
DROP TABLE endpoints;
ALTER TABLE outbox DROP COLUMN from_status;
