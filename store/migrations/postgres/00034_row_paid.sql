-- SQLite's index of (row, paid time) for the transition ranges' lists;
-- PostgreSQL reads a cancellation's order by its key and plans the range
-- by its statistics, so it takes none.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
