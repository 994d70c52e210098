-- The relay's sent marks as positions: a row says that every outbox
-- message with an id above the previous row's upto, up to its own, was
-- published at sent_at. On SQLite, whose outbox ids follow commit order
-- without holes, a round of the relay adds one row instead of rewriting
-- each message's row (and its two indexes). A message is sent when its
-- sent_at is set (as marked before, and always on PostgreSQL, whose ids
-- commit out of order) or its id is at most the greatest upto.

-- +goose Up
CREATE TABLE outbox_marks (
    upto    INTEGER   PRIMARY KEY,
    sent_at TIMESTAMP NOT NULL
);

-- +goose Down
UPDATE outbox SET sent_at = (SELECT m.sent_at FROM outbox_marks m WHERE m.upto >= outbox.id ORDER BY m.upto LIMIT 1)
WHERE sent_at IS NULL AND id <= (SELECT COALESCE(MAX(upto), 0) FROM outbox_marks);
DROP TABLE outbox_marks;
