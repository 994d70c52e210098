-- Requests refused before they could be trusted (no valid signature, a body
-- over the limit) are counted per minute, account, source address and
-- reason instead of each writing an event log row: a flood of them costs a
-- bounded number of rows, which the receiver keeps for a short time only.

-- +goose Up
CREATE TABLE webhook_rejections (
    minute     TIMESTAMP NOT NULL,
    account    TEXT      NOT NULL,
    source     TEXT      NOT NULL,
    reason     TEXT      NOT NULL,
    count      BIGINT    NOT NULL,
    last_at    TIMESTAMP NOT NULL,
    PRIMARY KEY (minute, account, source, reason)
);

-- +goose Down
DROP TABLE webhook_rejections;
