-- Nodes: each daemon sharing this state holds a lease on its node's row (SPEC §10). The epoch
-- goes up by one each time a daemon takes the node (starts, or comes back after its lease
-- lapsed); with the name it is the fencing token every write about runs is checked against.
-- A node whose lease expired is swept by any live one: its runs end "node lost" and the row
-- is marked retired.
CREATE TABLE nodes (
    name         text PRIMARY KEY,
    epoch        bigint NOT NULL,
    host         text NOT NULL,
    pid          integer NOT NULL,
    pid_start    bigint,
    listen       text,
    started_at   timestamptz NOT NULL,
    renewed_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    retired_at   timestamptz,
    retired_by   text
);
CREATE INDEX nodes_expiring ON nodes (expires_at) WHERE retired_at IS NULL;

-- The node a run goes on: set when it starts or a node claims its retry; kept after it ended.
ALTER TABLE runs ADD COLUMN node text;
CREATE INDEX runs_active_by_node ON runs (node, seq) WHERE state <> 'ended';
