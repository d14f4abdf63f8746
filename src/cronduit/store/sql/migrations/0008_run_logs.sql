-- Log tails kept with their runs, for a state shared by many hosts: the host that ran a run
-- keeps its log, and `cronduit job logs` elsewhere reads the tail stored here (the last MiB,
-- cronduit.core.log_tails). One row per run, replaced at each attempt's end. The SQLite store
-- has the table so that both backends hold one schema; a daemon on SQLite writes no rows.
CREATE TABLE run_logs (
    run_id       TEXT PRIMARY KEY,
    attempt      INTEGER NOT NULL,
    tail         BLOB NOT NULL,
    size         INTEGER NOT NULL,
    cut          INTEGER NOT NULL DEFAULT 0,
    stored_at    TEXT NOT NULL
);
