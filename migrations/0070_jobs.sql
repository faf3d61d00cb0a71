-- The job queue (agentmate.jobs): one lease row per unit of work that does not fit a request (wiki compile,
-- large sync/index). The row is the queue and the truth; an SQS message (or the local poller) only wakes a
-- worker. Lease, attempt, backoff and shutdown-refund rules: docs/decisions.md "Job queue".

CREATE TABLE jobs (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    kind text NOT NULL,
    -- The row of the owning domain this job works on (e.g. a wiki build); the domain keeps its own status.
    subject_id uuid,
    payload jsonb NOT NULL DEFAULT '{}',
    status text NOT NULL DEFAULT 'queued',
    -- attempts counts claims (a worker that dies still burns one); a shutdown yield refunds it.
    attempts integer NOT NULL DEFAULT 0,
    max_attempts integer NOT NULL DEFAULT 3,
    lease_owner text,
    lease_expires_at timestamptz,
    heartbeat_at timestamptz,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    -- When a wake-up was last sent (or is due to arrive): the sweep re-sends only rows not woken recently.
    woken_at timestamptz NOT NULL DEFAULT now(),
    last_error text,
    result jsonb,
    -- Usage accumulated over every attempt (a build that failed twice before succeeding cost all three calls).
    input_tokens bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    cost_micros bigint NOT NULL DEFAULT 0,
    queued_at timestamptz NOT NULL DEFAULT now(),
    started_at timestamptz,
    finished_at timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT jobs_id_account_key UNIQUE (id, account_id),
    CONSTRAINT jobs_kind_check CHECK (kind ~ '^[a-z][a-z0-9_]{0,63}$'),
    CONSTRAINT jobs_status_check CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    CONSTRAINT jobs_payload_check CHECK (jsonb_typeof(payload) = 'object'),
    CONSTRAINT jobs_attempts_check CHECK (attempts >= 0),
    CONSTRAINT jobs_max_attempts_check CHECK (max_attempts BETWEEN 1 AND 20),
    CONSTRAINT jobs_lease_check CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL)),
    CONSTRAINT jobs_usage_check CHECK (input_tokens >= 0 AND output_tokens >= 0 AND cost_micros >= 0)
);
-- The claim's and the sweep's scan: only unfinished rows, oldest due first.
CREATE INDEX jobs_claimable_idx ON jobs (next_attempt_at, queued_at) WHERE status IN ('queued', 'running');
CREATE INDEX jobs_account_idx ON jobs (account_id, queued_at DESC);
-- One unfinished job per subject and kind: a second enqueue for the same build/source hands back the first.
CREATE UNIQUE INDEX jobs_active_subject_key ON jobs (account_id, kind, subject_id)
    WHERE status IN ('queued', 'running') AND subject_id IS NOT NULL;
SELECT enable_tenant_rls('jobs');

-- The claim is the one query that runs across accounts (a worker does not know whose job a wake-up is for),
-- so it runs as the owner (SECURITY DEFINER) and touches exactly one row: the oldest claimable job (or the given
-- one). The caller then switches its transaction to that row's account, and everything the job's runner does
-- happens under RLS in db.tenant(account_id).
--   claimable = unfinished, due (next_attempt_at <= now) and not leased (no lease or an expired one).
--   attempts >= max_attempts: the row is failed ("gave up after N attempts") and returned with status failed
--   so the caller can tell the owning domain; otherwise it is leased to p_owner for p_lease_seconds.
CREATE FUNCTION jobs_claim(p_owner text, p_lease_seconds integer, p_job_id uuid DEFAULT NULL,
                           p_kinds text[] DEFAULT NULL)
    RETURNS SETOF jobs
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    v_id uuid;
    v_attempts integer;
    v_max integer;
BEGIN
    SELECT j.id, j.attempts, j.max_attempts INTO v_id, v_attempts, v_max
    FROM jobs j
    WHERE j.status IN ('queued', 'running')
      AND j.next_attempt_at <= now()
      AND (j.lease_expires_at IS NULL OR j.lease_expires_at <= now())
      AND (p_job_id IS NULL OR j.id = p_job_id)
      AND (p_kinds IS NULL OR j.kind = ANY (p_kinds))
    ORDER BY j.next_attempt_at, j.queued_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED;
    IF v_id IS NULL THEN
        RETURN;
    END IF;
    IF v_attempts >= v_max THEN
        RETURN QUERY
        UPDATE jobs SET status = 'failed', lease_owner = NULL, lease_expires_at = NULL, finished_at = now(),
                        updated_at = now(),
                        last_error = format('gave up after %s attempts', v_attempts)
                                     || coalesce(': last error: ' || last_error, '')
        WHERE id = v_id RETURNING *;
        RETURN;
    END IF;
    RETURN QUERY
    UPDATE jobs SET status = 'running', attempts = attempts + 1, lease_owner = p_owner,
                    lease_expires_at = now() + make_interval(secs => p_lease_seconds), heartbeat_at = now(),
                    started_at = coalesce(started_at, now()), updated_at = now()
    WHERE id = v_id RETURNING *;
END
$$;

-- The sweep's scan, also across accounts: claimable rows that no wake-up reached within p_grace_seconds (a lost
-- message, a killed worker's expired lease, a backoff too long for an SQS delay). Marks them woken and returns
-- their ids only; the wake-up it sends is then claimed like any other.
CREATE FUNCTION jobs_due_for_wakeup(p_grace_seconds integer, p_limit integer)
    RETURNS TABLE (job_id uuid)
    LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
    UPDATE jobs SET woken_at = now()
    WHERE id IN (
        SELECT j.id FROM jobs j
        WHERE j.status IN ('queued', 'running')
          AND j.next_attempt_at <= now()
          AND (j.lease_expires_at IS NULL OR j.lease_expires_at <= now())
          AND j.woken_at <= now() - make_interval(secs => p_grace_seconds)
        ORDER BY j.next_attempt_at, j.queued_at
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED)
    RETURNING id
$$;

REVOKE EXECUTE ON FUNCTION jobs_claim(text, integer, uuid, text[]), jobs_due_for_wakeup(integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION jobs_claim(text, integer, uuid, text[]), jobs_due_for_wakeup(integer, integer)
    TO agentmate_app;
