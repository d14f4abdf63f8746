-- Log tails kept with their runs: the host that ran a run keeps its log, and `cronduit job
-- logs` on any other host reads the tail stored here (the last MiB, cronduit.core.log_tails).
-- One row per run, replaced at each attempt's end.
CREATE TABLE run_logs (
    run_id       text PRIMARY KEY,
    attempt      integer NOT NULL,
    tail         bytea NOT NULL,
    size         bigint NOT NULL,
    cut          bigint NOT NULL DEFAULT 0,
    stored_at    timestamptz NOT NULL
);
