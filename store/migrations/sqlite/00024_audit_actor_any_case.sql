-- The audit trail is filtered by who in any case: its index is on the
-- actor's name in lower case (ASCII on SQLite, as lower() there), which
-- replaces the exact one. Actions are lower case already.

-- +goose Up
DROP INDEX audit_log_actor;
CREATE INDEX audit_log_actor_lower ON audit_log (lower(actor), id);

-- +goose Down
DROP INDEX audit_log_actor_lower;
CREATE INDEX audit_log_actor ON audit_log (actor, id);
