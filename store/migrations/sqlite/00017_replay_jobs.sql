-- The console's replay jobs (every dead letter a filter matches, replayed
-- in the background), kept in the mirror so that every process's console
-- shows them and a restart forgets none. The running job writes its
-- progress and a heartbeat every few seconds; one whose heartbeat is stale
-- had its process die and reads as interrupted. At most one job runs, in
-- every process together: the partial unique index refuses a second.

-- +goose Up
CREATE TABLE replay_jobs (
    id         INTEGER   PRIMARY KEY AUTOINCREMENT,
    query      TEXT      NOT NULL DEFAULT '',
    actor      TEXT      NOT NULL DEFAULT '',
    process    TEXT      NOT NULL DEFAULT '',
    state      TEXT      NOT NULL,
    matched    INTEGER   NOT NULL DEFAULT 0,
    replayed   INTEGER   NOT NULL DEFAULT 0,
    failed     INTEGER   NOT NULL DEFAULT 0,
    more       BOOLEAN   NOT NULL DEFAULT FALSE,
    last_error TEXT      NOT NULL DEFAULT '',
    started_at TIMESTAMP NOT NULL,
    beat_at    TIMESTAMP NOT NULL,
    ended_at   TIMESTAMP
);
CREATE UNIQUE INDEX replay_jobs_one_running ON replay_jobs (state) WHERE state = 'running';

-- +goose Down
DROP TABLE replay_jobs;
