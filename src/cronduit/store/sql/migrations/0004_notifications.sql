-- Notifications of run outcomes, written in the transaction that ends the run (so a crash
-- loses none) and delivered after it: pending until sent, or failed with the last reason.
CREATE TABLE notifications (
    seq          INTEGER PRIMARY KEY,
    run_id       TEXT NOT NULL,
    notifier     TEXT NOT NULL,
    body         TEXT NOT NULL,
    state        TEXT NOT NULL DEFAULT 'pending',
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_at      TEXT NOT NULL,
    error        TEXT NOT NULL DEFAULT '',
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
CREATE INDEX notifications_due ON notifications (next_at) WHERE state = 'pending';
CREATE INDEX notifications_by_run ON notifications (run_id);
CREATE INDEX notifications_failed ON notifications (updated_at) WHERE state = 'failed';
