-- Line items, metadata, status history and the outbox's uniqueness are keyed
-- by the order's row id instead of its (account, order_code). Order codes are
-- random, so every index keyed by them took each new order on a random page:
-- a batch of 100 new orders rewrote a page of each such index per order, and
-- the bytes written per order grew with the mirror (8 KB at 1,000 orders,
-- 63 KB at 100,000). Row ids grow with each new order, so those indexes now
-- take new orders on their last pages. The children drop the account and
-- order code they repeated: the orders row has them.

-- +goose Up
CREATE TABLE orders_v3 (
    id                       INTEGER   PRIMARY KEY,
    account                  TEXT      NOT NULL,
    order_code               TEXT      NOT NULL,
    order_id                 TEXT      NOT NULL DEFAULT '',
    order_reference          TEXT      NOT NULL DEFAULT '',
    name                     TEXT      NOT NULL DEFAULT '',
    description              TEXT      NOT NULL DEFAULT '',
    -- '' until the first fetch: a placeholder recorded by RecordOrderRef.
    status                   TEXT      NOT NULL DEFAULT '',
    subtotal                 TEXT,
    shipping_amount          TEXT,
    discount_amount          TEXT,
    surcharge_amount         TEXT,
    total                    TEXT,
    payment_link_url         TEXT      NOT NULL DEFAULT '',
    success_url              TEXT      NOT NULL DEFAULT '',
    cancel_url               TEXT      NOT NULL DEFAULT '',
    created_at               TIMESTAMP,
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
    -- The document exactly as fetched (TEXT, so key order and digits survive).
    raw_document             TEXT,
    document_hash            TEXT      NOT NULL DEFAULT '',
    first_seen_at            TIMESTAMP NOT NULL,
    last_synced_at           TIMESTAMP,
    last_event_at            TIMESTAMP,
    last_event_type          TEXT      NOT NULL DEFAULT '',
    fetch_count              INTEGER   NOT NULL DEFAULT 0,
    fetch_seq                INTEGER   NOT NULL DEFAULT 0,
    paid_fired               BOOLEAN   NOT NULL DEFAULT FALSE,
    status_transitions       INTEGER   NOT NULL DEFAULT 0,
    expires_at               TIMESTAMP,
    UNIQUE (account, order_code)
);
INSERT INTO orders_v3 (id, account, order_code, order_id, order_reference, name, description, status, subtotal, shipping_amount, discount_amount, surcharge_amount, total, payment_link_url, success_url, cancel_url, created_at, store_name, store_country_code, store_currency_code, store_currency_symbol, store_locale, store_timezone, has_payment, payment_authorization_code, payment_voucher_url, buyer_name, buyer_phone, buyer_email, raw_document, document_hash, first_seen_at, last_synced_at, last_event_at, last_event_type, fetch_count, fetch_seq, paid_fired, status_transitions, expires_at)
SELECT rowid, account, order_code, order_id, order_reference, name, description, status, subtotal, shipping_amount, discount_amount, surcharge_amount, total, payment_link_url, success_url, cancel_url, created_at, store_name, store_country_code, store_currency_code, store_currency_symbol, store_locale, store_timezone, has_payment, payment_authorization_code, payment_voucher_url, buyer_name, buyer_phone, buyer_email, raw_document, document_hash, first_seen_at, last_synced_at, last_event_at, last_event_type, fetch_count, fetch_seq, paid_fired, status_transitions, expires_at FROM orders;

CREATE TABLE order_line_items_v3 (
    order_row    INTEGER NOT NULL REFERENCES orders_v3 (id) ON DELETE CASCADE,
    position     INTEGER NOT NULL,
    product_id   TEXT    NOT NULL DEFAULT '',
    sku          TEXT    NOT NULL DEFAULT '',
    name         TEXT    NOT NULL DEFAULT '',
    price        TEXT    NOT NULL,
    promo_price  TEXT,
    quantity     INTEGER NOT NULL,
    image_url    TEXT    NOT NULL DEFAULT '',
    sub_total    TEXT    NOT NULL,
    PRIMARY KEY (order_row, position)
) WITHOUT ROWID;
INSERT INTO order_line_items_v3 (order_row, position, product_id, sku, name, price, promo_price, quantity, image_url, sub_total)
SELECT o.id, li.position, li.product_id, li.sku, li.name, li.price, li.promo_price, li.quantity, li.image_url, li.sub_total
FROM order_line_items li LEFT JOIN orders_v3 o ON o.account = li.account AND o.order_code = li.order_code;

CREATE TABLE order_metadata_v3 (
    order_row  INTEGER NOT NULL REFERENCES orders_v3 (id) ON DELETE CASCADE,
    position   INTEGER NOT NULL,
    name       TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    PRIMARY KEY (order_row, position)
) WITHOUT ROWID;
INSERT INTO order_metadata_v3 (order_row, position, name, value)
SELECT o.id, m.position, m.name, m.value
FROM order_metadata m LEFT JOIN orders_v3 o ON o.account = m.account AND o.order_code = m.order_code;

CREATE TABLE status_history_v3 (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    order_row   INTEGER   NOT NULL REFERENCES orders_v3 (id) ON DELETE CASCADE,
    from_status TEXT      NOT NULL,
    to_status   TEXT      NOT NULL,
    fetch_seq   INTEGER   NOT NULL,
    at          TIMESTAMP NOT NULL,
    cause       TEXT      NOT NULL DEFAULT ''
);
INSERT INTO status_history_v3 (id, order_row, from_status, to_status, fetch_seq, at, cause)
SELECT h.id, o.id, h.from_status, h.to_status, h.fetch_seq, h.at, h.cause
FROM status_history h LEFT JOIN orders_v3 o ON o.account = h.account AND o.order_code = h.order_code;

-- The outbox keeps its account and order code, which the relay reads; its
-- message ids begin with them, so unique per order row is unique.
CREATE TABLE outbox_v3 (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    order_row  INTEGER   NOT NULL,
    account    TEXT      NOT NULL,
    order_code TEXT      NOT NULL,
    subject    TEXT      NOT NULL,
    msg_id     TEXT      NOT NULL,
    payload    BLOB      NOT NULL,
    created_at TIMESTAMP NOT NULL,
    sent_at    TIMESTAMP,
    UNIQUE (order_row, msg_id)
);
INSERT INTO outbox_v3 (id, order_row, account, order_code, subject, msg_id, payload, created_at, sent_at)
SELECT x.id, o.id, x.account, x.order_code, x.subject, x.msg_id, x.payload, x.created_at, x.sent_at
FROM outbox x LEFT JOIN orders_v3 o ON o.account = x.account AND o.order_code = x.order_code;

DROP TABLE outbox;
DROP TABLE status_history;
DROP TABLE order_metadata;
DROP TABLE order_line_items;
DROP TABLE orders;
ALTER TABLE orders_v3 RENAME TO orders;
ALTER TABLE order_line_items_v3 RENAME TO order_line_items;
ALTER TABLE order_metadata_v3 RENAME TO order_metadata;
ALTER TABLE status_history_v3 RENAME TO status_history;
ALTER TABLE outbox_v3 RENAME TO outbox;

CREATE INDEX orders_order_id ON orders (account, order_id) WHERE order_id <> '';
CREATE INDEX orders_order_reference ON orders (account, order_reference) WHERE order_reference <> '';
CREATE INDEX orders_created_at ON orders (created_at DESC);
CREATE INDEX orders_account_created_at ON orders (account, created_at DESC);
CREATE INDEX orders_status_created_at ON orders (status, created_at DESC);
CREATE INDEX status_history_order ON status_history (order_row, id);
CREATE INDEX outbox_pending ON outbox (id) WHERE sent_at IS NULL;
CREATE INDEX outbox_sent_at ON outbox (sent_at) WHERE sent_at IS NOT NULL;

-- +goose Down
CREATE TABLE orders_v2 (
    account                  TEXT      NOT NULL,
    order_code               TEXT      NOT NULL,
    order_id                 TEXT      NOT NULL DEFAULT '',
    order_reference          TEXT      NOT NULL DEFAULT '',
    name                     TEXT      NOT NULL DEFAULT '',
    description              TEXT      NOT NULL DEFAULT '',
    -- '' until the first fetch: a placeholder recorded by RecordOrderRef.
    status                   TEXT      NOT NULL DEFAULT '',
    subtotal                 TEXT,
    shipping_amount          TEXT,
    discount_amount          TEXT,
    surcharge_amount         TEXT,
    total                    TEXT,
    payment_link_url         TEXT      NOT NULL DEFAULT '',
    success_url              TEXT      NOT NULL DEFAULT '',
    cancel_url               TEXT      NOT NULL DEFAULT '',
    created_at               TIMESTAMP,
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
    -- The document exactly as fetched (TEXT, so key order and digits survive).
    raw_document             TEXT,
    document_hash            TEXT      NOT NULL DEFAULT '',
    first_seen_at            TIMESTAMP NOT NULL,
    last_synced_at           TIMESTAMP,
    last_event_at            TIMESTAMP,
    last_event_type          TEXT      NOT NULL DEFAULT '',
    fetch_count              INTEGER   NOT NULL DEFAULT 0,
    fetch_seq                INTEGER   NOT NULL DEFAULT 0,
    paid_fired               BOOLEAN   NOT NULL DEFAULT FALSE,
    status_transitions       INTEGER   NOT NULL DEFAULT 0,
    expires_at               TIMESTAMP,
    PRIMARY KEY (account, order_code)
);
INSERT INTO orders_v2 (account, order_code, order_id, order_reference, name, description, status, subtotal, shipping_amount, discount_amount, surcharge_amount, total, payment_link_url, success_url, cancel_url, created_at, store_name, store_country_code, store_currency_code, store_currency_symbol, store_locale, store_timezone, has_payment, payment_authorization_code, payment_voucher_url, buyer_name, buyer_phone, buyer_email, raw_document, document_hash, first_seen_at, last_synced_at, last_event_at, last_event_type, fetch_count, fetch_seq, paid_fired, status_transitions, expires_at)
SELECT account, order_code, order_id, order_reference, name, description, status, subtotal, shipping_amount, discount_amount, surcharge_amount, total, payment_link_url, success_url, cancel_url, created_at, store_name, store_country_code, store_currency_code, store_currency_symbol, store_locale, store_timezone, has_payment, payment_authorization_code, payment_voucher_url, buyer_name, buyer_phone, buyer_email, raw_document, document_hash, first_seen_at, last_synced_at, last_event_at, last_event_type, fetch_count, fetch_seq, paid_fired, status_transitions, expires_at FROM orders ORDER BY id;

CREATE TABLE order_line_items_v2 (
    account      TEXT    NOT NULL,
    order_code   TEXT    NOT NULL,
    position     INTEGER NOT NULL,
    product_id   TEXT    NOT NULL DEFAULT '',
    sku          TEXT    NOT NULL DEFAULT '',
    name         TEXT    NOT NULL DEFAULT '',
    price        TEXT    NOT NULL,
    promo_price  TEXT,
    quantity     INTEGER NOT NULL,
    image_url    TEXT    NOT NULL DEFAULT '',
    sub_total    TEXT    NOT NULL,
    PRIMARY KEY (account, order_code, position),
    FOREIGN KEY (account, order_code) REFERENCES orders_v2 (account, order_code) ON DELETE CASCADE
);
INSERT INTO order_line_items_v2 (account, order_code, position, product_id, sku, name, price, promo_price, quantity, image_url, sub_total)
SELECT o.account, o.order_code, li.position, li.product_id, li.sku, li.name, li.price, li.promo_price, li.quantity, li.image_url, li.sub_total
FROM order_line_items li JOIN orders o ON o.id = li.order_row;

CREATE TABLE order_metadata_v2 (
    account    TEXT    NOT NULL,
    order_code TEXT    NOT NULL,
    position   INTEGER NOT NULL,
    name       TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    PRIMARY KEY (account, order_code, position),
    FOREIGN KEY (account, order_code) REFERENCES orders_v2 (account, order_code) ON DELETE CASCADE
);
INSERT INTO order_metadata_v2 (account, order_code, position, name, value)
SELECT o.account, o.order_code, m.position, m.name, m.value
FROM order_metadata m JOIN orders o ON o.id = m.order_row;

CREATE TABLE status_history_v2 (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    account     TEXT      NOT NULL,
    order_code  TEXT      NOT NULL,
    from_status TEXT      NOT NULL,
    to_status   TEXT      NOT NULL,
    fetch_seq   INTEGER   NOT NULL,
    at          TIMESTAMP NOT NULL,
    cause       TEXT      NOT NULL DEFAULT '',
    FOREIGN KEY (account, order_code) REFERENCES orders_v2 (account, order_code) ON DELETE CASCADE
);
INSERT INTO status_history_v2 (id, account, order_code, from_status, to_status, fetch_seq, at, cause)
SELECT h.id, o.account, o.order_code, h.from_status, h.to_status, h.fetch_seq, h.at, h.cause
FROM status_history h JOIN orders o ON o.id = h.order_row;

CREATE TABLE outbox_v2 (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    account    TEXT      NOT NULL,
    order_code TEXT      NOT NULL,
    subject    TEXT      NOT NULL,
    msg_id     TEXT      NOT NULL UNIQUE,
    payload    BLOB      NOT NULL,
    created_at TIMESTAMP NOT NULL,
    sent_at    TIMESTAMP
);
INSERT INTO outbox_v2 (id, account, order_code, subject, msg_id, payload, created_at, sent_at)
SELECT id, account, order_code, subject, msg_id, payload, created_at, sent_at FROM outbox;

DROP TABLE outbox;
DROP TABLE status_history;
DROP TABLE order_metadata;
DROP TABLE order_line_items;
DROP TABLE orders;
ALTER TABLE orders_v2 RENAME TO orders;
ALTER TABLE order_line_items_v2 RENAME TO order_line_items;
ALTER TABLE order_metadata_v2 RENAME TO order_metadata;
ALTER TABLE status_history_v2 RENAME TO status_history;
ALTER TABLE outbox_v2 RENAME TO outbox;

CREATE INDEX orders_order_id ON orders (account, order_id) WHERE order_id <> '';
CREATE INDEX orders_order_reference ON orders (account, order_reference) WHERE order_reference <> '';
CREATE INDEX orders_created_at ON orders (created_at DESC);
CREATE INDEX orders_account_created_at ON orders (account, created_at DESC);
CREATE INDEX orders_status_created_at ON orders (status, created_at DESC);
CREATE INDEX status_history_order ON status_history (account, order_code, id);
CREATE INDEX outbox_pending ON outbox (id) WHERE sent_at IS NULL;
CREATE INDEX outbox_sent_at ON outbox (sent_at) WHERE sent_at IS NOT NULL;
