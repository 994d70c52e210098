-- SQLite's index of (row, paid time, created time, store) for the
-- transition ranges' lists and the paid ranges' walk; PostgreSQL reads an
-- order by its key and plans the range by its statistics, so it takes none.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
