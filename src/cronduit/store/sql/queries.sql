-- Named queries of the SQL store. Each starts with "-- name: NAME"; parameters are :name.
-- Portable SQL only: the PostgreSQL backend runs the same text.

-- name: insert_event
INSERT INTO events (delivery_id, job, kind, label, slot, late, payload, operator, accepted_at,
                    parent)
VALUES (:delivery_id, :job, :kind, :label, :slot, :late, :payload, :operator, :accepted_at,
        :parent)
ON CONFLICT (delivery_id) DO NOTHING
RETURNING seq;

-- name: event_by_delivery
SELECT * FROM events WHERE delivery_id = :delivery_id;

-- name: new_events
SELECT * FROM events WHERE state = 'new' ORDER BY seq LIMIT :limit;

-- name: new_events_except
-- The jobs named in :excluded (a JSON array) run on other nodes.
SELECT * FROM events
WHERE state = 'new' AND job NOT IN (SELECT value FROM json_each(:excluded))
ORDER BY seq LIMIT :limit;

-- name: held_elsewhere
-- Each job's oldest trigger still new besides those this router holds (:jobs and :routing
-- are JSON arrays). One router per SQLite state, so it finds none; kept for the contract.
SELECT job, MIN(seq) FROM events
WHERE state = 'new' AND job IN (SELECT value FROM json_each(:jobs))
    AND seq NOT IN (SELECT value FROM json_each(:routing))
GROUP BY job;

-- name: waiting_events
SELECT * FROM events WHERE job = :job AND state = 'waiting' ORDER BY seq;

-- name: waiting_events_head
SELECT * FROM events WHERE job = :job AND state = 'waiting' ORDER BY seq LIMIT :limit;

-- name: newest_waiting_event
SELECT * FROM events WHERE job = :job AND state = 'waiting' ORDER BY seq DESC LIMIT 1;

-- name: jobs_newest_waiting
SELECT * FROM events WHERE seq IN (
    SELECT MAX(seq) FROM events
    WHERE state = 'waiting' AND job IN (SELECT value FROM json_each(:jobs)) GROUP BY job);

-- name: set_event_state
UPDATE events SET state = :state, run_id = :run_id WHERE seq = :seq;

-- name: set_one_event_state
UPDATE events SET state = :state, run_id = :run_id WHERE seq = :seq;

-- name: events_of_run
SELECT * FROM events WHERE run_id = :run_id ORDER BY seq;

-- name: due_timers
SELECT * FROM timers WHERE due_at <= :now ORDER BY due_at, job LIMIT :limit;

-- name: timers
SELECT * FROM timers ORDER BY job;

-- name: get_timer
SELECT * FROM timers WHERE job = :job;

-- name: timers_of
-- The timers of the jobs in :jobs (a JSON array): one primary-key look-up each.
SELECT * FROM timers WHERE job IN (SELECT value FROM json_each(:jobs)) ORDER BY job;

-- name: armed_jobs
SELECT job FROM timers;

-- name: armed_jobs_due_before
SELECT job FROM timers WHERE due_at < :due_before;

-- name: put_timer
INSERT INTO timers (job, timing_key, slot, slot_name, due_at, last_name, version)
VALUES (:job, :timing_key, :slot, :slot_name, :due_at, :last_name, :version)
ON CONFLICT (job) DO UPDATE SET
    timing_key = excluded.timing_key, slot = excluded.slot, slot_name = excluded.slot_name,
    due_at = excluded.due_at, last_name = excluded.last_name,
    version = timers.version + 1;

-- name: advance_timer
UPDATE timers SET slot = :slot, slot_name = :slot_name, due_at = :due_at,
    last_name = :last_name, version = version + 1
WHERE job = :job AND version = :expected_version;

-- name: delete_timer
DELETE FROM timers WHERE job = :job;

-- name: record_slot
INSERT INTO slots (job, slot, name, fate, reason, event_seq, recorded_at, count, until_slot)
VALUES (:job, :slot, :name, :fate, :reason, :event_seq, :recorded_at, :count, :until_slot)
ON CONFLICT (job, slot) DO NOTHING;

-- name: slots
SELECT * FROM slots
WHERE job = :job AND slot >= :start AND slot <= :end
ORDER BY slot;

-- name: insert_run
INSERT INTO runs (id, job, trigger_seq, kind, label, state, exclusive, outcome, reason,
    created_at, started_at, finished_at, attempts, exit_status, inputs, operator, late,
    deadline_at, next_attempt_at, pid, pid_start, attempt_dir, cancel_reason, files_pruned,
    node, execution_id)
VALUES (:id, :job, :trigger_seq, :kind, :label, :state, :exclusive, :outcome, :reason,
    :created_at, :started_at, :finished_at, :attempts, :exit_status, :inputs, :operator, :late,
    :deadline_at, :next_attempt_at, :pid, :pid_start, :attempt_dir, :cancel_reason,
    :files_pruned, :node, :execution_id);

-- name: get_run
SELECT * FROM runs WHERE id = :id;

-- name: active_runs
SELECT * FROM runs WHERE state <> 'ended' ORDER BY seq;

-- name: active_runs_of_node
SELECT * FROM runs WHERE state <> 'ended' AND node = :node ORDER BY seq;

-- name: cancelled_runs
SELECT * FROM runs
WHERE state = 'running' AND cancel_reason IS NOT NULL AND (:node IS NULL OR node = :node)
ORDER BY seq;

-- name: active_runs_of_job
SELECT * FROM runs WHERE state <> 'ended' AND job = :job ORDER BY seq;

-- name: history
SELECT * FROM runs WHERE job = :job ORDER BY seq DESC LIMIT :limit;

-- name: recent_runs
-- Each job's newest :per_job runs (:jobs is a JSON array), newest first: one search of
-- runs_by_job per job, so a job with years of history costs what a new one does; each
-- run's row is then found by its key (seq), not searched for again in the index by job.
SELECT r.* FROM json_each(:jobs) AS j, runs AS r
WHERE r.seq IN (SELECT n.seq FROM runs AS n WHERE n.job = j.value
                ORDER BY n.seq DESC LIMIT :per_job)
ORDER BY r.job, r.seq DESC;

-- name: run_marks
-- recent_runs, the few fields a strip of recent runs shows: RunMark's fields, in its order
-- (each row is read as a mark as it is), the rows of a job together.
SELECT r.id, r.job, r.kind, r.state, r.outcome, r.reason FROM json_each(:jobs) AS j, runs AS r
WHERE r.seq IN (SELECT n.seq FROM runs AS n WHERE n.job = j.value
                ORDER BY n.seq DESC LIMIT :per_job)
ORDER BY r.job, r.seq DESC;

-- name: jobs_last_ended
-- The jobs whose last counted run, the newest that ended and was not skipped, ended with one
-- of :outcomes (a JSON array): from each job's row of facts, by its index on that outcome.
SELECT job FROM job_run_facts INDEXED BY job_run_facts_by_last_outcome
WHERE last_outcome IN (SELECT value FROM json_each(:outcomes));

-- name: jobs_skipped_in_a_row
-- The jobs whose newest :count runs (1 to 3) were all skipped: their :count-th newest run is
-- newer than their newest run that was not skipped. From the rows of the jobs whose newest
-- run was skipped (a partial index).
SELECT job FROM job_run_facts INDEXED BY job_run_facts_skipping
WHERE newest_seq > unskipped_seq
    AND CASE :count WHEN 1 THEN newest_seq WHEN 2 THEN second_seq ELSE third_seq END
        > unskipped_seq;

-- name: find_runs
-- Keyset pagination, newest first: a page goes on below the last run of the one before. The
-- bound on seq is one range, never inside an OR, so the runs are read from the cursor's run
-- down by their key: a page half a million runs deep costs what the first one does (with
-- an OR, every newer run was scanned: 70 ms at 500,000).
SELECT * FROM runs
WHERE (:outcome IS NULL OR outcome = :outcome) AND (:kind IS NULL OR kind = :kind)
    AND (:since IS NULL OR created_at >= :since) AND (:until IS NULL OR created_at < :until)
    AND seq < CASE WHEN :after IS NULL THEN 9223372036854775807
                   ELSE COALESCE((SELECT seq FROM runs WHERE id = :after), 0) END
ORDER BY seq DESC LIMIT :limit;

-- name: find_runs_of_job
-- find_runs of one job: read from runs_by_job, the job's runs only (among a million runs of
-- 10,000 jobs, find_runs read a hundred of others' for each of its own).
SELECT * FROM runs INDEXED BY runs_by_job
WHERE job = :job AND (:outcome IS NULL OR outcome = :outcome)
    AND (:kind IS NULL OR kind = :kind)
    AND (:since IS NULL OR created_at >= :since) AND (:until IS NULL OR created_at < :until)
    AND seq < CASE WHEN :after IS NULL THEN 9223372036854775807
                   ELSE COALESCE((SELECT seq FROM runs WHERE id = :after), 0) END
ORDER BY seq DESC LIMIT :limit;

-- name: runs_to_prune
SELECT * FROM runs
WHERE job = :job AND state = 'ended' AND files_pruned = 0
    AND (:node IS NULL OR node = :node) AND seq < (
    SELECT COALESCE(MIN(seq), 0) FROM (
        SELECT seq FROM runs WHERE job = :job ORDER BY seq DESC LIMIT :keep
    ) AS newest
)
ORDER BY seq;

-- name: store_log_tail
-- A replayed end of an earlier attempt leaves a later attempt's tail in place.
INSERT INTO run_logs (run_id, attempt, tail, size, cut, stored_at)
VALUES (:run_id, :attempt, :tail, :size, :cut, :stored_at)
ON CONFLICT (run_id) DO UPDATE
SET attempt = excluded.attempt, tail = excluded.tail, size = excluded.size,
    cut = excluded.cut, stored_at = excluded.stored_at
WHERE excluded.attempt >= run_logs.attempt;

-- name: stored_log_tail
SELECT run_id, attempt, tail, size, cut, stored_at FROM run_logs WHERE run_id = :run_id;

-- name: drop_log_tail
DELETE FROM run_logs WHERE run_id = :run_id;

-- name: insert_run_end
INSERT INTO run_ends (job, run_id, event, outcome, ended_at)
VALUES (:job, :run_id, :event, :outcome, :ended_at)
ON CONFLICT (run_id) DO NOTHING
RETURNING seq;

-- name: run_ends_after
SELECT * FROM run_ends WHERE seq > :seq ORDER BY seq;

-- name: run_ends_of_job_after
SELECT * FROM run_ends WHERE job = :job AND seq > :seq ORDER BY seq;

-- name: unchained_run_ends
SELECT * FROM run_ends WHERE chained = 0 ORDER BY seq LIMIT :limit;

-- name: mark_chained
UPDATE run_ends SET chained = 1 WHERE seq = :seq;

-- name: last_run_end_seq
SELECT COALESCE(MAX(seq), 0) AS seq FROM run_ends;

-- name: get_meta
SELECT value FROM meta WHERE key = :key;

-- name: set_meta
INSERT INTO meta (key, value) VALUES (:key, :value)
ON CONFLICT (key) DO UPDATE SET value = excluded.value;

-- name: next_due
SELECT MIN(due) FROM (
    SELECT MIN(due_at) AS due FROM timers WHERE :with_timers = 1
    UNION ALL
    SELECT MIN(next_attempt_at) AS due FROM runs WHERE state = 'backoff'
    UNION ALL
    SELECT MIN(deadline_at) AS due FROM runs
    WHERE state = 'running' AND cancel_reason IS NULL
    UNION ALL
    SELECT MIN(until) AS due FROM pauses WHERE resumed_at IS NULL
) AS candidates;

-- name: due_backoffs
-- A node retries its own runs and those no node holds (a lost node's, released by the sweep).
SELECT * FROM runs
WHERE state = 'backoff' AND (next_attempt_at <= :now OR deadline_at <= :now)
    AND (:node IS NULL OR node = :node OR node IS NULL)
    AND job NOT IN (SELECT value FROM json_each(:excluded))
ORDER BY seq;

-- name: overdue_runs
SELECT * FROM runs
WHERE state = 'running' AND cancel_reason IS NULL AND deadline_at <= :now
    AND (:node IS NULL OR node = :node)
ORDER BY seq;

-- name: active_count
SELECT COUNT(*) AS running,
       COALESCE(SUM(CASE WHEN state = 'backoff' THEN 1 ELSE 0 END), 0) AS backoff
FROM runs WHERE job = :job AND state <> 'ended';

-- name: jobs_running
-- Each job's runs going, how many sleep in backoff and the oldest of those (:jobs is a
-- JSON array): a routing batch's jobs at once.
SELECT job, COUNT(*) AS running,
       COALESCE(SUM(CASE WHEN state = 'backoff' THEN 1 ELSE 0 END), 0) AS backoff,
       (SELECT b.id FROM runs AS b WHERE b.job = r.job AND b.state = 'backoff'
        ORDER BY b.seq LIMIT 1) AS sleeping
FROM runs AS r WHERE job IN (SELECT value FROM json_each(:jobs)) AND state <> 'ended'
GROUP BY job;

-- name: jobs_with_waiting
SELECT DISTINCT job FROM events WHERE state = 'waiting' ORDER BY job;

-- name: record_start
UPDATE runs SET pid = :pid, pid_start = :pid_start WHERE id = :id;

-- name: insert_numbered_events
INSERT INTO events (seq, delivery_id, job, kind, label, slot, late, payload, operator,
                    accepted_at, parent)
VALUES (:seq, :delivery_id, :job, :kind, :label, :slot, :late, :payload, :operator,
        :accepted_at, :parent)
ON CONFLICT (delivery_id) DO NOTHING;

-- name: last_event_seq
SELECT COALESCE(MAX(seq), 0) AS seq FROM events;

-- name: event_seq_of_delivery
SELECT seq FROM events WHERE delivery_id = :delivery_id;

-- name: insert_events
INSERT INTO events (delivery_id, job, kind, label, slot, late, payload, operator, accepted_at,
                    parent)
VALUES (:delivery_id, :job, :kind, :label, :slot, :late, :payload, :operator, :accepted_at,
        :parent)
ON CONFLICT (delivery_id) DO NOTHING;

-- name: record_delivery
INSERT INTO deliveries (delivery_id, source, event, label, facts, received_at, triggers)
VALUES (:delivery_id, :source, :event, :label, :facts, :received_at, :triggers)
ON CONFLICT (delivery_id) DO NOTHING;

-- name: get_delivery
SELECT * FROM deliveries WHERE delivery_id = :delivery_id;

-- name: events_of_delivery
SELECT * FROM events WHERE parent = :parent ORDER BY seq;

-- name: insert_notification
INSERT INTO notifications (run_id, notifier, body, next_at, created_at, updated_at)
VALUES (:run_id, :notifier, :body, :next_at, :created_at, :created_at);

-- name: due_notifications
SELECT * FROM notifications WHERE state = 'pending' AND next_at <= :now
ORDER BY next_at, seq LIMIT :limit;

-- name: record_notification_try
UPDATE notifications SET state = :state, attempts = attempts + 1, next_at = :next_at,
    error = :error, updated_at = :now
WHERE seq = :seq;

-- name: notifications_of_run
SELECT * FROM notifications WHERE run_id = :run_id ORDER BY seq;

-- name: failed_notifications
SELECT * FROM notifications WHERE state = 'failed' ORDER BY updated_at DESC, seq DESC
LIMIT :limit;

-- name: insert_pause
INSERT INTO pauses (job, reason, operator, paused_at, until, resumed_at, resumed_by)
VALUES (:job, :reason, :operator, :paused_at, :until, :resumed_at, :resumed_by);

-- name: active_pause
SELECT * FROM pauses WHERE job = :job AND resumed_at IS NULL;

-- name: active_pauses
SELECT * FROM pauses WHERE resumed_at IS NULL ORDER BY job, seq;

-- name: pauses_resumed_after
SELECT * FROM pauses WHERE resumed_at IS NULL OR resumed_at > :after ORDER BY job, seq;

-- name: end_pause
UPDATE pauses SET resumed_at = :at, resumed_by = :by
WHERE job = :job AND resumed_at IS NULL
RETURNING *;

-- name: insert_audit
INSERT INTO audit (at, operator, action, job, detail)
VALUES (:at, :operator, :action, :job, :detail)
RETURNING seq;

-- name: audit
SELECT * FROM audit ORDER BY seq DESC LIMIT :limit;

-- name: insert_execution
-- DO NOTHING on its id: a second execution of an id writes nothing, and the caller raises.
INSERT INTO executions (id, job, definition, inputs, state, created_at, expires_at, updated_at,
    activations, run_id, failed_step)
VALUES (:id, :job, :definition, :inputs, :state, :created_at, :expires_at, :updated_at,
    :activations, :run_id, :failed_step)
ON CONFLICT (id) DO NOTHING;

-- name: insert_execution_step
INSERT INTO execution_steps (execution_id, step_id, position, state)
VALUES (:execution_id, :step_id, :position, 'pending');

-- name: get_execution
SELECT * FROM executions WHERE id = :id;

-- name: executions
SELECT * FROM executions ORDER BY seq DESC LIMIT :limit;

-- name: executions_of_job
SELECT * FROM executions WHERE job = :job ORDER BY seq DESC LIMIT :limit;

-- name: execution_steps
SELECT * FROM execution_steps WHERE execution_id = :execution_id ORDER BY position;

-- name: insert_step_attempt
-- DO NOTHING on either key (the run and attempt number, the attempt id): the caller raises.
INSERT INTO step_attempts (execution_id, step_id, attempt_id, run_id, attempt, started_at,
    ended_at, exit_status, outcome, reason)
VALUES (:execution_id, :step_id, :attempt_id, :run_id, :attempt, :started_at, :ended_at,
    :exit_status, :outcome, :reason)
ON CONFLICT DO NOTHING;

-- name: end_step_attempt
UPDATE step_attempts SET ended_at = :ended_at, exit_status = :exit_status,
    outcome = :outcome, reason = :reason
WHERE run_id = :run_id AND attempt = :attempt;

-- name: step_attempts
SELECT * FROM step_attempts WHERE execution_id = :execution_id ORDER BY seq;

-- name: step_attempt
SELECT * FROM step_attempts WHERE run_id = :run_id AND attempt = :attempt;

-- name: expired_executions
SELECT * FROM executions
WHERE expires_at <= :now AND state <> 'running'
ORDER BY expires_at, seq LIMIT :limit;

-- name: delete_execution
-- Its steps and step attempts go with it (ON DELETE CASCADE).
DELETE FROM executions WHERE id = :id;

-- name: waiting_counts
-- How many triggers wait in each job's work, for every job where any waits. The index by
-- state, named: the planner preferred a scan of events_waiting, whose order suits the
-- GROUP BY, which read every event ever accepted (a million: 40 ms) to find the few waiting.
SELECT job, COUNT(*) FROM events INDEXED BY events_by_state WHERE state = 'waiting'
GROUP BY job;

-- name: last_successes
-- Each job's newest success (:jobs is a JSON array): one look-up of runs_last_success each.
SELECT j.value, (SELECT r.finished_at FROM runs AS r
                 WHERE r.job = j.value AND r.outcome = 'success' AND r.finished_at IS NOT NULL
                 ORDER BY r.finished_at DESC LIMIT 1)
FROM json_each(:jobs) AS j;
