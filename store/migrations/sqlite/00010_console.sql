-- The audit trail of actions (who, as which role, which way, what, on
-- which object, how it ended) and the console's sessions. A session row
-- keeps hashes only: of the cookie (id) and of the token it was started
-- with (token_identity), so neither can be read back from the database.

-- +goose Up
CREATE TABLE audit_log (
    id      INTEGER   PRIMARY KEY AUTOINCREMENT,
    at      TIMESTAMP NOT NULL,
    actor   TEXT      NOT NULL,
    role    TEXT      NOT NULL DEFAULT '',
    via     TEXT      NOT NULL,
    action  TEXT      NOT NULL,
    object  TEXT      NOT NULL DEFAULT '',
    outcome TEXT      NOT NULL
);
-- Pages newest first by id, filtered by actor or action; the oldest rows,
-- for the pruner and time filters.
CREATE INDEX audit_log_actor ON audit_log (actor, id);
CREATE INDEX audit_log_action ON audit_log (action, id);
CREATE INDEX audit_log_at ON audit_log (at);

CREATE TABLE console_sessions (
    id             TEXT      PRIMARY KEY,
    token_identity TEXT      NOT NULL,
    token_name     TEXT      NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    expires_at     TIMESTAMP NOT NULL
);
CREATE INDEX console_sessions_expires_at ON console_sessions (expires_at);

-- +goose Down
DROP TABLE console_sessions;
DROP TABLE audit_log;
