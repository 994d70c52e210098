-- The fetch sequence's lease. A process that holds it hands out numbers
-- from its reservation without reading the sequence, until lease_until;
-- another process that takes numbers meanwhile revokes it (lease_holder
-- emptied, lease_until kept) and uses its numbers only once lease_until
-- has passed, so no fetch that starts later gets a lower number. writer
-- and written_at say who took numbers last: a process takes the lease
-- only when nobody else has taken numbers lately.

-- +goose Up
ALTER TABLE fetch_sequence ADD COLUMN writer TEXT NOT NULL DEFAULT '';
ALTER TABLE fetch_sequence ADD COLUMN written_at TIMESTAMPTZ;
ALTER TABLE fetch_sequence ADD COLUMN lease_holder TEXT NOT NULL DEFAULT '';
ALTER TABLE fetch_sequence ADD COLUMN lease_until TIMESTAMPTZ;

-- +goose Down
ALTER TABLE fetch_sequence DROP COLUMN lease_until;
ALTER TABLE fetch_sequence DROP COLUMN lease_holder;
ALTER TABLE fetch_sequence DROP COLUMN written_at;
ALTER TABLE fetch_sequence DROP COLUMN writer;
