-- The event log keyed so that inserts append. A message id is random, so
-- its unique index took every event on a random page; a redelivery keeps
-- its event's receipt time (the receiver's, else the queue's own time of
-- the message), so a unique (account, received_at, msg_id) index catches
-- redeliveries and takes a batch's events on its last pages, and also
-- serves what event_log_received_at did. Rows are reached by id (the
-- rowid, which grows). SQLite cannot drop a primary key, so the table is
-- rebuilt; its rows keep their rowids.

-- +goose Up
CREATE TABLE event_log_new (
    id              INTEGER   PRIMARY KEY,
    msg_id          TEXT      NOT NULL,
    account         TEXT      NOT NULL,
    received_at     TIMESTAMP NOT NULL,
    type            TEXT      NOT NULL DEFAULT '',
    order_type      TEXT      NOT NULL DEFAULT '',
    order_id        TEXT      NOT NULL DEFAULT '',
    order_reference TEXT      NOT NULL DEFAULT '',
    order_code      TEXT      NOT NULL DEFAULT '',
    signature       TEXT      NOT NULL DEFAULT '',
    outcome         TEXT      NOT NULL DEFAULT '',
    detail          TEXT      NOT NULL DEFAULT '',
    order_row       INTEGER
);
INSERT INTO event_log_new (id, msg_id, account, received_at, type, order_type, order_id, order_reference, order_code, signature, outcome, detail, order_row)
SELECT rowid, msg_id, account, received_at, type, order_type, order_id, order_reference, order_code, signature, outcome, detail, order_row
FROM event_log ORDER BY rowid;
DROP TABLE event_log;
ALTER TABLE event_log_new RENAME TO event_log;
CREATE UNIQUE INDEX event_log_receipt ON event_log (account, received_at, msg_id);
CREATE INDEX event_log_order_code ON event_log (account, order_code, received_at DESC) WHERE order_code <> '' AND order_row IS NULL;
CREATE INDEX event_log_order_id ON event_log (account, order_id, received_at DESC) WHERE order_id <> '';
CREATE INDEX event_log_order_row ON event_log (order_row, received_at DESC) WHERE order_row IS NOT NULL;

-- +goose Down
-- A message id logged at two receipt times keeps its latest row.
CREATE TABLE event_log_old (
    msg_id          TEXT      PRIMARY KEY,
    account         TEXT      NOT NULL,
    received_at     TIMESTAMP NOT NULL,
    type            TEXT      NOT NULL DEFAULT '',
    order_type      TEXT      NOT NULL DEFAULT '',
    order_id        TEXT      NOT NULL DEFAULT '',
    order_reference TEXT      NOT NULL DEFAULT '',
    order_code      TEXT      NOT NULL DEFAULT '',
    signature       TEXT      NOT NULL DEFAULT '',
    outcome         TEXT      NOT NULL DEFAULT '',
    detail          TEXT      NOT NULL DEFAULT '',
    order_row       INTEGER
);
INSERT OR REPLACE INTO event_log_old (rowid, msg_id, account, received_at, type, order_type, order_id, order_reference, order_code, signature, outcome, detail, order_row)
SELECT id, msg_id, account, received_at, type, order_type, order_id, order_reference, order_code, signature, outcome, detail, order_row
FROM event_log ORDER BY id;
DROP TABLE event_log;
ALTER TABLE event_log_old RENAME TO event_log;
CREATE INDEX event_log_received_at ON event_log (account, received_at DESC);
CREATE INDEX event_log_order_code ON event_log (account, order_code, received_at DESC) WHERE order_code <> '' AND order_row IS NULL;
CREATE INDEX event_log_order_id ON event_log (account, order_id, received_at DESC) WHERE order_id <> '';
CREATE INDEX event_log_order_row ON event_log (order_row, received_at DESC) WHERE order_row IS NOT NULL;
