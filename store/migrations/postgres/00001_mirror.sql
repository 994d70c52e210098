-- The order mirror, PostgreSQL dialect. Money is unconstrained NUMERIC (it keeps
-- the digits it is given); times are timestamptz.

-- +goose Up
CREATE TABLE orders (
    account                  TEXT      NOT NULL,
    order_code               TEXT      NOT NULL,
    order_id                 TEXT      NOT NULL DEFAULT '',
    order_reference          TEXT      NOT NULL DEFAULT '',
    name                     TEXT      NOT NULL DEFAULT '',
    description              TEXT      NOT NULL DEFAULT '',
    -- '' until the first fetch: a placeholder recorded by RecordOrderRef.
    status                   TEXT      NOT NULL DEFAULT '',
    subtotal                 NUMERIC,
    shipping_amount          NUMERIC,
    discount_amount          NUMERIC,
    surcharge_amount         NUMERIC,
    total                    NUMERIC,
    payment_link_url         TEXT      NOT NULL DEFAULT '',
    success_url              TEXT      NOT NULL DEFAULT '',
    cancel_url               TEXT      NOT NULL DEFAULT '',
    created_at               TIMESTAMPTZ,
    store_name               TEXT      NOT NULL DEFAULT '',
    store_country_code       TEXT      NOT NULL DEFAULT '',
    store_currency_code      TEXT      NOT NULL DEFAULT '',
    store_currency_symbol    TEXT      NOT NULL DEFAULT '',
    store_locale             TEXT      NOT NULL DEFAULT '',
    store_timezone           TEXT      NOT NULL DEFAULT '',
    has_payment              BOOLEAN   NOT NULL DEFAULT FALSE,
    payment_authorization_code TEXT    NOT NULL DEFAULT '',
    payment_voucher_url      TEXT      NOT NULL DEFAULT '',
    buyer_name               TEXT      NOT NULL DEFAULT '',
    buyer_phone              TEXT      NOT NULL DEFAULT '',
    buyer_email              TEXT      NOT NULL DEFAULT '',
    -- The document exactly as fetched (TEXT, not jsonb, which reorders keys).
    raw_document             TEXT,
    document_hash            TEXT      NOT NULL DEFAULT '',
    first_seen_at            TIMESTAMPTZ NOT NULL,
    last_synced_at           TIMESTAMPTZ,
    last_event_at            TIMESTAMPTZ,
    last_event_type          TEXT      NOT NULL DEFAULT '',
    fetch_count              BIGINT    NOT NULL DEFAULT 0,
    fetch_seq                BIGINT    NOT NULL DEFAULT 0,
    paid_fired               BOOLEAN   NOT NULL DEFAULT FALSE,
    status_transitions       BIGINT    NOT NULL DEFAULT 0,
    expires_at               TIMESTAMPTZ,
    PRIMARY KEY (account, order_code)
);
CREATE INDEX orders_order_id ON orders (account, order_id) WHERE order_id <> '';
CREATE INDEX orders_order_reference ON orders (account, order_reference) WHERE order_reference <> '';
CREATE INDEX orders_created_at ON orders (created_at DESC);
CREATE INDEX orders_account_created_at ON orders (account, created_at DESC);
CREATE INDEX orders_status_created_at ON orders (status, created_at DESC);

CREATE TABLE order_line_items (
    account      TEXT    NOT NULL,
    order_code   TEXT    NOT NULL,
    position     INTEGER NOT NULL,
    product_id   TEXT    NOT NULL DEFAULT '',
    sku          TEXT    NOT NULL DEFAULT '',
    name         TEXT    NOT NULL DEFAULT '',
    price        NUMERIC NOT NULL,
    promo_price  NUMERIC,
    quantity     INTEGER NOT NULL,
    image_url    TEXT    NOT NULL DEFAULT '',
    sub_total    NUMERIC NOT NULL,
    PRIMARY KEY (account, order_code, position),
    FOREIGN KEY (account, order_code) REFERENCES orders (account, order_code) ON DELETE CASCADE
);

CREATE TABLE order_metadata (
    account    TEXT    NOT NULL,
    order_code TEXT    NOT NULL,
    position   INTEGER NOT NULL,
    name       TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    PRIMARY KEY (account, order_code, position),
    FOREIGN KEY (account, order_code) REFERENCES orders (account, order_code) ON DELETE CASCADE
);

CREATE TABLE status_history (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account     TEXT      NOT NULL,
    order_code  TEXT      NOT NULL,
    from_status TEXT      NOT NULL,
    to_status   TEXT      NOT NULL,
    fetch_seq   BIGINT    NOT NULL,
    at          TIMESTAMPTZ NOT NULL,
    cause       TEXT      NOT NULL DEFAULT '',
    FOREIGN KEY (account, order_code) REFERENCES orders (account, order_code) ON DELETE CASCADE
);
CREATE INDEX status_history_order ON status_history (account, order_code, id);

CREATE TABLE event_log (
    msg_id          TEXT      PRIMARY KEY,
    account         TEXT      NOT NULL,
    received_at     TIMESTAMPTZ NOT NULL,
    type            TEXT      NOT NULL DEFAULT '',
    order_type      TEXT      NOT NULL DEFAULT '',
    order_id        TEXT      NOT NULL DEFAULT '',
    order_reference TEXT      NOT NULL DEFAULT '',
    order_code      TEXT      NOT NULL DEFAULT '',
    signature       TEXT      NOT NULL DEFAULT '',
    outcome         TEXT      NOT NULL DEFAULT '',
    detail          TEXT      NOT NULL DEFAULT ''
);
CREATE INDEX event_log_received_at ON event_log (account, received_at DESC);
CREATE INDEX event_log_order_code ON event_log (account, order_code, received_at DESC) WHERE order_code <> '';
CREATE INDEX event_log_order_id ON event_log (account, order_id, received_at DESC) WHERE order_id <> '';

CREATE TABLE dead_letters (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    msg_id          TEXT      NOT NULL,
    account         TEXT      NOT NULL,
    reason          TEXT      NOT NULL,
    attempts        INTEGER     NOT NULL DEFAULT 0,
    last_error      TEXT      NOT NULL DEFAULT '',
    order_id        TEXT      NOT NULL DEFAULT '',
    order_reference TEXT      NOT NULL DEFAULT '',
    order_code      TEXT      NOT NULL DEFAULT '',
    body            BYTEA       NOT NULL,
    headers         TEXT      NOT NULL DEFAULT '{}',
    created_at      TIMESTAMPTZ NOT NULL,
    replayed_at     TIMESTAMPTZ,
    replay_count    INTEGER     NOT NULL DEFAULT 0
);
-- A redelivered failure updates its letter instead of adding a second one;
-- once replayed, a letter leaves this index and a new failure gets a new row.
CREATE UNIQUE INDEX dead_letters_pending_msg_id ON dead_letters (msg_id) WHERE replayed_at IS NULL;
CREATE INDEX dead_letters_account_created ON dead_letters (account, created_at DESC);
CREATE INDEX dead_letters_order_id ON dead_letters (order_id) WHERE order_id <> '';
CREATE INDEX dead_letters_order_reference ON dead_letters (order_reference) WHERE order_reference <> '';

CREATE TABLE outbox (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account    TEXT      NOT NULL,
    order_code TEXT      NOT NULL,
    subject    TEXT      NOT NULL,
    msg_id     TEXT      NOT NULL UNIQUE,
    payload    BYTEA       NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    sent_at    TIMESTAMPTZ
);
CREATE INDEX outbox_pending ON outbox (id) WHERE sent_at IS NULL;

CREATE TABLE fetch_sequence (
    id    SMALLINT PRIMARY KEY CHECK (id = 1),
    value BIGINT  NOT NULL
);
INSERT INTO fetch_sequence (id, value) VALUES (1, 0);

-- +goose Down
DROP TABLE fetch_sequence;
DROP TABLE outbox;
DROP TABLE dead_letters;
DROP TABLE event_log;
DROP TABLE status_history;
DROP TABLE order_metadata;
DROP TABLE order_line_items;
DROP TABLE orders;
