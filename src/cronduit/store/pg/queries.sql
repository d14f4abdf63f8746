-- Named queries of the PostgreSQL store. Each starts with "-- name: NAME"; parameters are
-- %(name)s (psycopg's). The SQLite store's queries.sql with PostgreSQL's types, and with row
-- locks where SQLite's one writer made a read the reader's own.

-- name: insert_event
-- The NOT EXISTS spares a seq for a delivery accepted before (ON CONFLICT alone would take
-- one from the sequence first); ON CONFLICT still settles two transactions at once.
INSERT INTO events (delivery_id, job, kind, label, slot, late, payload, operator, accepted_at,
                    parent)
SELECT %(delivery_id)s, %(job)s, %(kind)s, %(label)s, %(slot)s::timestamptz, %(late)s,
       %(payload)s, %(operator)s, %(accepted_at)s::timestamptz, %(parent)s
WHERE NOT EXISTS (SELECT 1 FROM events WHERE delivery_id = %(delivery_id)s)
ON CONFLICT (delivery_id) DO NOTHING
RETURNING seq;

-- name: event_seqs_of_deliveries
SELECT delivery_id, seq FROM events WHERE delivery_id = ANY(%(ids)s);

-- name: event_by_delivery
SELECT * FROM events WHERE delivery_id = %(delivery_id)s;

-- name: new_events
-- Locked and skipping locked rows: routers on many daemons each route an event once.
-- The jobs named in excluded run on other nodes (their nodes: globs leave this one out).
SELECT * FROM events WHERE state = 'new' AND NOT (job = ANY(%(excluded)s::text[]))
ORDER BY seq LIMIT %(limit)s FOR UPDATE SKIP LOCKED;

-- name: held_elsewhere
-- Each job's oldest trigger still new besides those this router holds: another daemon's
-- router has it (see routing). A routing batch's jobs at once.
SELECT job, MIN(seq) FROM events
WHERE state = 'new' AND job = ANY(%(jobs)s::text[]) AND NOT (seq = ANY(%(routing)s::bigint[]))
GROUP BY job;

-- name: waiting_events
SELECT * FROM events WHERE job = %(job)s AND state = 'waiting' ORDER BY seq;

-- name: waiting_events_head
SELECT * FROM events WHERE job = %(job)s AND state = 'waiting' ORDER BY seq LIMIT %(limit)s;

-- name: newest_waiting_event
SELECT * FROM events WHERE job = %(job)s AND state = 'waiting' ORDER BY seq DESC LIMIT 1;

-- name: jobs_newest_waiting
SELECT DISTINCT ON (job) * FROM events
WHERE job = ANY(%(jobs)s::text[]) AND state = 'waiting' ORDER BY job, seq DESC;

-- name: set_event_state
UPDATE events SET state = %(state)s, run_id = %(run_id)s WHERE seq = ANY(%(seqs)s);

-- name: set_event_states
-- Each event its own state and run, in one statement (a routing batch's decisions).
UPDATE events SET state = change.state, run_id = change.run_id
FROM unnest(%(seqs)s::bigint[], %(states)s::text[], %(runs)s::text[])
    AS change (seq, state, run_id)
WHERE events.seq = change.seq;

-- name: events_of_run
SELECT * FROM events WHERE run_id = %(run_id)s ORDER BY seq;

-- name: due_timers
-- Locked and skipping locked rows: daemons firing at once each claim different timers.
SELECT * FROM timers WHERE due_at <= %(now)s ORDER BY due_at, job LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: timers
SELECT * FROM timers ORDER BY job;

-- name: get_timer
SELECT * FROM timers WHERE job = %(job)s;

-- name: timers_of
-- The timers of the jobs in jobs: one primary-key look-up each.
SELECT * FROM timers WHERE job = ANY(%(jobs)s::text[]) ORDER BY job;

-- name: armed_jobs
SELECT job FROM timers;

-- name: armed_jobs_due_before
SELECT job FROM timers WHERE due_at < %(due_before)s;

-- name: put_timer
INSERT INTO timers (job, timing_key, slot, slot_name, due_at, last_name, version)
VALUES (%(job)s, %(timing_key)s, %(slot)s, %(slot_name)s, %(due_at)s, %(last_name)s,
        %(version)s)
ON CONFLICT (job) DO UPDATE SET
    timing_key = excluded.timing_key, slot = excluded.slot, slot_name = excluded.slot_name,
    due_at = excluded.due_at, last_name = excluded.last_name,
    version = timers.version + 1;

-- name: advance_timer
UPDATE timers SET slot = %(slot)s, slot_name = %(slot_name)s, due_at = %(due_at)s,
    last_name = %(last_name)s, version = version + 1
WHERE job = %(job)s AND version = %(expected_version)s;

-- name: delete_timer
DELETE FROM timers WHERE job = %(job)s;

-- name: record_slot
INSERT INTO slots (job, slot, name, fate, reason, event_seq, recorded_at, count, until_slot)
VALUES (%(job)s, %(slot)s, %(name)s, %(fate)s, %(reason)s, %(event_seq)s, %(recorded_at)s,
        %(count)s, %(until_slot)s)
ON CONFLICT (job, slot) DO NOTHING;

-- name: slots
SELECT * FROM slots
WHERE job = %(job)s
  AND (%(start)s::timestamptz IS NULL OR slot >= %(start)s)
  AND (%(end)s::timestamptz IS NULL OR slot <= %(end)s)
ORDER BY slot;

-- name: insert_run
-- DO NOTHING on either key (the id, one exclusive run in progress): a refused run writes
-- nothing and leaves the transaction usable, as on SQLite; the caller raises Conflict.
INSERT INTO runs (id, job, trigger_seq, kind, label, state, exclusive, outcome, reason,
    created_at, started_at, finished_at, attempts, exit_status, inputs, operator, late,
    deadline_at, next_attempt_at, pid, pid_start, attempt_dir, cancel_reason, files_pruned,
    node, execution_id)
VALUES (%(id)s, %(job)s, %(trigger_seq)s, %(kind)s, %(label)s, %(state)s, %(exclusive)s,
    %(outcome)s, %(reason)s, %(created_at)s, %(started_at)s, %(finished_at)s, %(attempts)s,
    %(exit_status)s, %(inputs)s, %(operator)s, %(late)s, %(deadline_at)s,
    %(next_attempt_at)s, %(pid)s, %(pid_start)s, %(attempt_dir)s, %(cancel_reason)s,
    %(files_pruned)s, %(node)s, %(execution_id)s)
ON CONFLICT DO NOTHING;

-- name: get_run
SELECT * FROM runs WHERE id = %(id)s;

-- name: active_runs
SELECT * FROM runs WHERE state <> 'ended' ORDER BY seq;

-- name: active_runs_of_node
SELECT * FROM runs WHERE state <> 'ended' AND node = %(node)s ORDER BY seq;

-- name: cancelled_runs
-- Runs another node asked to stop (a replace, a deadline): only their own node can.
SELECT * FROM runs
WHERE state = 'running' AND cancel_reason IS NOT NULL
    AND (%(node)s::text IS NULL OR node = %(node)s)
ORDER BY seq;

-- name: active_runs_of_job
SELECT * FROM runs WHERE state <> 'ended' AND job = %(job)s ORDER BY seq;

-- name: history
SELECT * FROM runs WHERE job = %(job)s ORDER BY seq DESC LIMIT %(limit)s;

-- name: recent_runs
-- Each job's newest per_job runs, newest first: one index scan of runs_by_job per job, so a
-- job with years of history costs what a new one does.
SELECT r.* FROM unnest(%(jobs)s::text[]) AS j(job)
CROSS JOIN LATERAL (SELECT * FROM runs WHERE runs.job = j.job
                    ORDER BY seq DESC LIMIT %(per_job)s) AS r
ORDER BY r.job, r.seq DESC;

-- name: jobs_last_ended
-- The jobs whose last counted run, the newest that ended and was not skipped, ended with one
-- of outcomes: from each job's row of facts, by its index on that outcome, and for the few
-- jobs with changes not folded yet, from the row with those folded in.
SELECT job FROM job_run_facts
WHERE last_outcome = ANY(%(outcomes)s::text[])
    AND job NOT IN (SELECT job FROM job_run_facts_changes)
UNION ALL
SELECT n.job FROM (SELECT DISTINCT job FROM job_run_facts_changes) AS c
CROSS JOIN LATERAL (SELECT * FROM job_run_facts_now AS f WHERE f.job = c.job) AS n
WHERE n.last_outcome = ANY(%(outcomes)s::text[]);

-- name: jobs_skipped_in_a_row
-- The jobs whose newest count runs (1 to 3) were all skipped: their count-th newest run is
-- newer than their newest run that was not skipped. From the rows of the jobs whose newest
-- run was skipped (a partial index), and as jobs_last_ended for jobs with changes.
SELECT job FROM job_run_facts
WHERE newest_seq > unskipped_seq
    AND CASE %(count)s::integer WHEN 1 THEN newest_seq WHEN 2 THEN second_seq
        ELSE third_seq END > unskipped_seq
    AND job NOT IN (SELECT job FROM job_run_facts_changes)
UNION ALL
SELECT n.job FROM (SELECT DISTINCT job FROM job_run_facts_changes) AS c
CROSS JOIN LATERAL (SELECT * FROM job_run_facts_now AS f WHERE f.job = c.job) AS n
WHERE CASE %(count)s::integer WHEN 1 THEN n.newest_seq WHEN 2 THEN n.second_seq
      ELSE n.third_seq END > n.unskipped_seq;

-- name: run_marks
-- recent_runs, the few fields a strip of recent runs shows: RunMark's fields, in its order
-- (each row is read as a mark as it is), the rows of a job together.
SELECT r.id, r.job, r.kind, r.state, r.outcome, r.reason FROM unnest(%(jobs)s::text[]) AS j(job)
CROSS JOIN LATERAL (SELECT id, job, kind, state, outcome, reason, seq FROM runs
                    WHERE runs.job = j.job ORDER BY seq DESC LIMIT %(per_job)s) AS r
ORDER BY r.job, r.seq DESC;

-- name: find_runs
-- Keyset pagination, newest first: a page goes on below the last run of the one before (one
-- range on seq, never inside an OR, so the primary key serves it from the cursor's run down).
SELECT * FROM runs
WHERE (%(outcome)s::text IS NULL OR outcome = %(outcome)s)
    AND (%(kind)s::text IS NULL OR kind = %(kind)s)
    AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
    AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
    AND seq < CASE WHEN %(after)s::text IS NULL THEN 9223372036854775807
                   ELSE COALESCE((SELECT seq FROM runs WHERE id = %(after)s), 0) END
ORDER BY seq DESC LIMIT %(limit)s;

-- name: find_runs_of_job
-- find_runs of one job (the job always given: its runs only, read from runs_by_job).
SELECT * FROM runs
WHERE job = %(job)s
    AND (%(outcome)s::text IS NULL OR outcome = %(outcome)s)
    AND (%(kind)s::text IS NULL OR kind = %(kind)s)
    AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
    AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
    AND seq < CASE WHEN %(after)s::text IS NULL THEN 9223372036854775807
                   ELSE COALESCE((SELECT seq FROM runs WHERE id = %(after)s), 0) END
ORDER BY seq DESC LIMIT %(limit)s;

-- name: runs_to_prune
-- With many nodes, each prunes the runs it ran: their files are on its host.
SELECT * FROM runs
WHERE job = %(job)s AND state = 'ended' AND NOT files_pruned
    AND (%(node)s::text IS NULL OR node = %(node)s) AND seq < (
    SELECT COALESCE(MIN(seq), 0) FROM (
        SELECT seq FROM runs WHERE job = %(job)s ORDER BY seq DESC LIMIT %(keep)s
    ) AS newest
)
ORDER BY seq;

-- name: store_log_tail
-- A replayed end of an earlier attempt leaves a later attempt's tail in place.
INSERT INTO run_logs (run_id, attempt, tail, size, cut, stored_at)
VALUES (%(run_id)s, %(attempt)s, %(tail)s, %(size)s, %(cut)s, %(stored_at)s::timestamptz)
ON CONFLICT (run_id) DO UPDATE
SET attempt = excluded.attempt, tail = excluded.tail, size = excluded.size,
    cut = excluded.cut, stored_at = excluded.stored_at
WHERE excluded.attempt >= run_logs.attempt;

-- name: stored_log_tail
SELECT run_id, attempt, tail, size, cut, stored_at FROM run_logs WHERE run_id = %(run_id)s;

-- name: drop_log_tail
DELETE FROM run_logs WHERE run_id = %(run_id)s;

-- name: insert_run_end
-- NOT EXISTS: see insert_event.
INSERT INTO run_ends (job, run_id, event, outcome, ended_at)
SELECT %(job)s, %(run_id)s, %(event)s, %(outcome)s, %(ended_at)s::timestamptz
WHERE NOT EXISTS (SELECT 1 FROM run_ends WHERE run_id = %(run_id)s)
ON CONFLICT (run_id) DO NOTHING
RETURNING seq;

-- name: run_ends_after
SELECT * FROM run_ends WHERE seq > %(seq)s ORDER BY seq;

-- name: run_ends_of_job_after
SELECT * FROM run_ends WHERE job = %(job)s AND seq > %(seq)s ORDER BY seq;

-- name: unchained_run_ends
SELECT * FROM run_ends WHERE NOT chained ORDER BY seq LIMIT %(limit)s;

-- name: mark_chained
UPDATE run_ends SET chained = true WHERE seq = %(seq)s;

-- name: last_run_end_seq
SELECT COALESCE(MAX(seq), 0) AS seq FROM run_ends;

-- name: get_meta
SELECT value FROM meta WHERE key = %(key)s;

-- name: set_meta
INSERT INTO meta (key, value) VALUES (%(key)s, %(value)s)
ON CONFLICT (key) DO UPDATE SET value = excluded.value;

-- name: next_due
SELECT MIN(due) FROM (
    SELECT MIN(due_at) AS due FROM timers WHERE %(with_timers)s
    UNION ALL
    SELECT MIN(next_attempt_at) AS due FROM runs WHERE state = 'backoff'
    UNION ALL
    SELECT MIN(deadline_at) AS due FROM runs
    WHERE state = 'running' AND cancel_reason IS NULL
    UNION ALL
    SELECT MIN(until) AS due FROM pauses WHERE resumed_at IS NULL
) AS candidates;

-- name: due_backoffs
-- A node retries its own runs and those no node holds (a lost node's, released by the sweep),
-- each claimed once: locked, skipping those another node's retry holds.
SELECT * FROM runs
WHERE state = 'backoff' AND (next_attempt_at <= %(now)s OR deadline_at <= %(now)s)
    AND (%(node)s::text IS NULL OR node = %(node)s OR node IS NULL)
    AND NOT (job = ANY(%(excluded)s::text[]))
ORDER BY seq FOR UPDATE SKIP LOCKED;

-- name: overdue_runs
SELECT * FROM runs
WHERE state = 'running' AND cancel_reason IS NULL AND deadline_at <= %(now)s
    AND (%(node)s::text IS NULL OR node = %(node)s)
ORDER BY seq;

-- name: active_count
SELECT COUNT(*) AS running, COUNT(*) FILTER (WHERE state = 'backoff') AS backoff
FROM runs WHERE job = %(job)s AND state <> 'ended';

-- name: jobs_running
-- Each job's runs going, how many sleep in backoff and the oldest of those: a routing
-- batch's jobs at once.
SELECT job, COUNT(*) AS running, COUNT(*) FILTER (WHERE state = 'backoff') AS backoff,
       (ARRAY_AGG(id ORDER BY seq) FILTER (WHERE state = 'backoff'))[1] AS sleeping
FROM runs WHERE job = ANY(%(jobs)s::text[]) AND state <> 'ended' GROUP BY job;

-- name: jobs_with_waiting
SELECT DISTINCT job FROM events WHERE state = 'waiting' ORDER BY job;

-- name: record_start
UPDATE runs SET pid = %(pid)s, pid_start = %(pid_start)s WHERE id = %(id)s;

-- name: record_delivery
INSERT INTO deliveries (delivery_id, source, event, label, facts, received_at, triggers)
VALUES (%(delivery_id)s, %(source)s, %(event)s, %(label)s, %(facts)s, %(received_at)s,
        %(triggers)s)
ON CONFLICT (delivery_id) DO NOTHING;

-- name: get_delivery
SELECT * FROM deliveries WHERE delivery_id = %(delivery_id)s;

-- name: events_of_delivery
SELECT * FROM events WHERE parent = %(parent)s ORDER BY seq;

-- name: insert_notification
INSERT INTO notifications (run_id, notifier, body, next_at, created_at, updated_at)
VALUES (%(run_id)s, %(notifier)s, %(body)s, %(next_at)s, %(created_at)s, %(created_at)s);

-- name: due_notifications
-- Claimed: each due row is locked (skipping those another daemon's pass holds) and its next
-- try moved a claim's length ahead, so the daemons sharing the state send each notification
-- once; a daemon that dies holding a claim leaves the row to be sent when the claim lapses.
-- Each comes back with the next try it was due at, in the order they were due.
WITH due AS (
    SELECT seq, next_at FROM notifications WHERE state = 'pending' AND next_at <= %(now)s
    ORDER BY next_at, seq LIMIT %(limit)s FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE notifications SET next_at = %(now)s + make_interval(secs => %(claim)s)
    FROM due WHERE notifications.seq = due.seq
    RETURNING notifications.seq, run_id, notifier, body, state, attempts, due.next_at AS due_at,
              error, created_at, updated_at
)
SELECT seq, run_id, notifier, body, state, attempts, due_at AS next_at, error, created_at,
       updated_at
FROM claimed ORDER BY due_at, seq;

-- name: record_notification_try
UPDATE notifications SET state = %(state)s, attempts = attempts + 1, next_at = %(next_at)s,
    error = %(error)s, updated_at = %(now)s
WHERE seq = %(seq)s;

-- name: notifications_of_run
SELECT * FROM notifications WHERE run_id = %(run_id)s ORDER BY seq;

-- name: failed_notifications
SELECT * FROM notifications WHERE state = 'failed' ORDER BY updated_at DESC, seq DESC
LIMIT %(limit)s;

-- name: insert_pause
-- DO NOTHING on the one-active-pause key: see insert_run.
INSERT INTO pauses (job, reason, operator, paused_at, until, resumed_at, resumed_by)
VALUES (%(job)s, %(reason)s, %(operator)s, %(paused_at)s, %(until)s, %(resumed_at)s,
        %(resumed_by)s)
ON CONFLICT DO NOTHING;

-- name: active_pause
SELECT * FROM pauses WHERE job = %(job)s AND resumed_at IS NULL;

-- name: active_pauses
SELECT * FROM pauses WHERE resumed_at IS NULL ORDER BY job, seq;

-- name: pauses_resumed_after
SELECT * FROM pauses WHERE resumed_at IS NULL OR resumed_at > %(after)s ORDER BY job, seq;

-- name: end_pause
UPDATE pauses SET resumed_at = %(at)s, resumed_by = %(by)s
WHERE job = %(job)s AND resumed_at IS NULL
RETURNING *;

-- name: insert_audit
INSERT INTO audit (at, operator, action, job, detail)
VALUES (%(at)s, %(operator)s, %(action)s, %(job)s, %(detail)s)
RETURNING seq;

-- name: audit
SELECT * FROM audit ORDER BY seq DESC LIMIT %(limit)s;

-- name: take_intake
-- Transactions that accept triggers take turns from their first trigger to their commit, so
-- the seqs the database hands out rise in the order triggers commit: a router never meets a
-- trigger older than one it already put in a job's work (one committed later with a lower
-- seq). Held to the transaction's end; the schema's name keeps two states apart.
SELECT pg_advisory_xact_lock(%(space)s, hashtext(current_schema()));

-- name: claim_jobs
-- A job's work is decided by one node at a time: a lock for this transaction, skipped (false)
-- while another node's transaction holds it. The two-key form keeps cronduit's locks apart
-- from any other advisory locks of the database; the schema's name in the hash keeps the
-- claims of two states in one database (each in its schema) apart.
SELECT job, pg_try_advisory_xact_lock(%(space)s, hashtext(current_schema() || '/' || job))
FROM unnest(%(jobs)s::text[]) AS job;

-- name: lost_nodes
-- Nodes whose lease expired by the database's clock, each swept by one live node.
SELECT name, epoch FROM nodes
WHERE retired_at IS NULL AND expires_at < clock_timestamp() AND name <> %(me)s
ORDER BY expires_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED;

-- name: release_backoffs
-- A lost node's runs sleeping before a retry: any node may now claim the retry.
UPDATE runs SET node = NULL WHERE node = %(node)s AND state = 'backoff';

-- name: retire_node
UPDATE nodes SET retired_at = clock_timestamp(), retired_by = %(by)s
WHERE name = %(name)s AND epoch = %(epoch)s;

-- name: insert_execution
-- DO NOTHING on its id: see insert_run.
INSERT INTO executions (id, job, definition, inputs, state, created_at, expires_at, updated_at,
    activations, run_id, failed_step)
VALUES (%(id)s, %(job)s, %(definition)s, %(inputs)s, %(state)s, %(created_at)s,
    %(expires_at)s, %(updated_at)s, %(activations)s, %(run_id)s, %(failed_step)s)
ON CONFLICT (id) DO NOTHING;

-- name: insert_execution_step
INSERT INTO execution_steps (execution_id, step_id, position, state)
VALUES (%(execution_id)s, %(step_id)s, %(position)s, 'pending');

-- name: get_execution
SELECT * FROM executions WHERE id = %(id)s;

-- name: executions
SELECT * FROM executions ORDER BY seq DESC LIMIT %(limit)s;

-- name: executions_of_job
SELECT * FROM executions WHERE job = %(job)s ORDER BY seq DESC LIMIT %(limit)s;

-- name: execution_steps
SELECT * FROM execution_steps WHERE execution_id = %(execution_id)s ORDER BY position;

-- name: insert_step_attempt
-- DO NOTHING on either key (the run and attempt number, the attempt id): see insert_run.
INSERT INTO step_attempts (execution_id, step_id, attempt_id, run_id, attempt, started_at,
    ended_at, exit_status, outcome, reason)
VALUES (%(execution_id)s, %(step_id)s, %(attempt_id)s, %(run_id)s, %(attempt)s,
    %(started_at)s, %(ended_at)s, %(exit_status)s, %(outcome)s, %(reason)s)
ON CONFLICT DO NOTHING;

-- name: end_step_attempt
UPDATE step_attempts SET ended_at = %(ended_at)s, exit_status = %(exit_status)s,
    outcome = %(outcome)s, reason = %(reason)s
WHERE run_id = %(run_id)s AND attempt = %(attempt)s;

-- name: step_attempts
SELECT * FROM step_attempts WHERE execution_id = %(execution_id)s ORDER BY seq;

-- name: step_attempt
SELECT * FROM step_attempts WHERE run_id = %(run_id)s AND attempt = %(attempt)s;

-- name: expired_executions
SELECT * FROM executions
WHERE expires_at <= %(now)s AND state <> 'running'
ORDER BY expires_at, seq LIMIT %(limit)s;

-- name: delete_execution
-- Its steps and step attempts go with it (ON DELETE CASCADE).
DELETE FROM executions WHERE id = %(id)s;

-- name: waiting_counts
-- How many triggers wait in each job's work, for every job where any waits.
SELECT job, COUNT(*) FROM events WHERE state = 'waiting' GROUP BY job;

-- name: last_successes
-- Each job's newest success: one look-up of runs_last_success each.
SELECT j.job, (SELECT r.finished_at FROM runs AS r
               WHERE r.job = j.job AND r.outcome = 'success' AND r.finished_at IS NOT NULL
               ORDER BY r.finished_at DESC LIMIT 1)
FROM unnest(%(jobs)s::text[]) AS j(job);
