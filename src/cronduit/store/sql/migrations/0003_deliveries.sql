-- Code-host deliveries: recorded once per delivery id (X-GitHub-Delivery), each the parent
-- of the triggers derived from it in the same transaction, so a redelivery is recognised
-- and a trigger can say which delivery it came from.
CREATE TABLE deliveries (
    delivery_id  TEXT PRIMARY KEY,
    source       TEXT NOT NULL,
    event        TEXT NOT NULL,
    label        TEXT NOT NULL,
    facts        TEXT NOT NULL,
    received_at  TEXT NOT NULL,
    triggers     INTEGER NOT NULL
);
ALTER TABLE events ADD COLUMN parent TEXT REFERENCES deliveries (delivery_id);
CREATE INDEX events_by_parent ON events (parent) WHERE parent IS NOT NULL;
