-- The reconciler's schedule: when each order that can still change is next
-- checked (NULL: its status is final, it is never checked), and when a
-- fetch last found its document changed, one of the activities that bring
-- the next check near (ordersync.NextCheck). Orders mirrored before the
-- schedule are due at once, least recently active first.

-- +goose Up
ALTER TABLE orders ADD COLUMN changed_at TIMESTAMPTZ;
ALTER TABLE orders ADD COLUMN next_check_at TIMESTAMPTZ;
UPDATE orders SET next_check_at = COALESCE(last_event_at, last_synced_at, first_seen_at)
WHERE status NOT IN ('CANCELLED', 'FINALIZED');
CREATE INDEX orders_next_check ON orders (account, next_check_at) WHERE next_check_at IS NOT NULL;

-- +goose Down
DROP INDEX orders_next_check;
ALTER TABLE orders DROP COLUMN next_check_at;
ALTER TABLE orders DROP COLUMN changed_at;
