-- Per-account limits (issue 25 §1): a request-rate limiter and leases on concurrent expensive requests, both
-- shared by every process (Lambda environments, the MCP container) because their state is here.
--
-- The rate is a GCRA (generic cell rate algorithm): one row per account holding its theoretical arrival time
-- (tat). Each admitted request moves tat to greatest(tat, now()) + 60 s / per_minute; a request is refused while
-- that would put tat more than burst intervals ahead of now(). One upsert per request, no window reset storms.
-- The rows are tenant rows (RLS like every table with account_id), written only through the SECURITY DEFINER
-- function below: the check runs right after authentication, outside any tenant transaction.

CREATE TABLE account_rate (
    account_id uuid PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    tat timestamptz NOT NULL
);
SELECT enable_tenant_rls('account_rate');

CREATE TABLE account_leases (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    expires_at timestamptz NOT NULL
);
CREATE INDEX account_leases_account_idx ON account_leases (account_id, expires_at);
SELECT enable_tenant_rls('account_leases');

-- Admit one request of p_account: returns (retry_after, wait_ms, refused_by, lease_id). retry_after (whole
-- seconds, rounded up: the Retry-After header) and wait_ms (the exact wait, rounded down) are 0 when admitted.
-- p_per_minute <= 0 turns the rate limit off. With p_slots > 0 the request is expensive and also takes a lease
-- (at most p_slots unexpired leases per account, each held for at most p_lease_s); a refused request neither
-- counts against the rate nor takes a lease.
CREATE FUNCTION limits_admit(p_account uuid, p_per_minute integer, p_burst integer, p_slots integer,
                             p_lease_s integer)
    RETURNS TABLE (retry_after integer, wait_ms integer, refused_by text, lease_id uuid)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    v_now timestamptz := clock_timestamp();
    v_step interval;
    v_tat timestamptz;
    v_held integer;
    v_lease uuid;
    v_wait double precision;
BEGIN
    IF p_per_minute > 0 THEN
        v_step := make_interval(secs => 60.0 / p_per_minute);
        SELECT r.tat INTO v_tat FROM account_rate r WHERE r.account_id = p_account;
        IF v_tat IS NOT NULL AND greatest(v_tat, v_now) + v_step - v_now > v_step * greatest(p_burst, 1) THEN
            v_wait := extract(epoch FROM greatest(v_tat, v_now) + v_step - v_now - v_step * greatest(p_burst, 1));
            RETURN QUERY SELECT greatest(1, ceil(v_wait)::integer), floor(v_wait * 1000)::integer,
                'requests_per_minute'::text, NULL::uuid;
            RETURN;
        END IF;
    END IF;
    IF p_slots > 0 THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('account_leases:' || p_account::text, 0));
        SELECT count(*) INTO v_held FROM account_leases l
        WHERE l.account_id = p_account AND l.expires_at > v_now;
        IF v_held >= p_slots THEN
            RETURN QUERY SELECT 1, 0, 'concurrent_expensive_requests'::text, NULL::uuid;
            RETURN;
        END IF;
        DELETE FROM account_leases l WHERE l.account_id = p_account AND l.expires_at <= v_now;
        INSERT INTO account_leases (account_id, expires_at)
        VALUES (p_account, v_now + make_interval(secs => p_lease_s)) RETURNING id INTO v_lease;
    END IF;
    IF p_per_minute > 0 THEN
        INSERT INTO account_rate AS r (account_id, tat) VALUES (p_account, v_now + v_step)
        ON CONFLICT (account_id) DO UPDATE SET tat = greatest(r.tat, v_now) + v_step;
    END IF;
    RETURN QUERY SELECT 0, 0, NULL::text, v_lease;
END
$$;

CREATE FUNCTION limits_release(p_account uuid, p_lease uuid) RETURNS void
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
AS $$ DELETE FROM account_leases WHERE id = p_lease AND account_id = p_account $$;

REVOKE EXECUTE ON FUNCTION limits_admit(uuid, integer, integer, integer, integer), limits_release(uuid, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION limits_admit(uuid, integer, integer, integer, integer), limits_release(uuid, uuid)
    TO agentmate_app;

-- Fair queues (issue 25 §1): the claim skips a job whose account already runs p_running_cap jobs (unexpired
-- leases), so one account's backlog never holds every worker; its jobs wait their turn, none is refused. The
-- count is re-checked under a per-account advisory lock once a row is chosen, so concurrent claims never run
-- more than the cap. p_running_cap <= 0 turns the cap off. Otherwise as 0070's jobs_claim.
CREATE INDEX jobs_running_account_idx ON jobs (account_id) WHERE status = 'running';
DROP FUNCTION jobs_claim(text, integer, uuid, text[]);
CREATE FUNCTION jobs_claim(p_owner text, p_lease_seconds integer, p_job_id uuid DEFAULT NULL,
                           p_kinds text[] DEFAULT NULL, p_running_cap integer DEFAULT 0)
    RETURNS SETOF jobs
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    v_id uuid;
    v_account uuid;
    v_attempts integer;
    v_max integer;
BEGIN
    SELECT j.id, j.account_id, j.attempts, j.max_attempts INTO v_id, v_account, v_attempts, v_max
    FROM jobs j
    WHERE j.status IN ('queued', 'running')
      AND j.next_attempt_at <= now()
      AND (j.lease_expires_at IS NULL OR j.lease_expires_at <= now())
      AND (p_job_id IS NULL OR j.id = p_job_id)
      AND (p_kinds IS NULL OR j.kind = ANY (p_kinds))
      AND (p_running_cap <= 0 OR (
          SELECT count(*) FROM jobs r
          WHERE r.account_id = j.account_id AND r.status = 'running' AND r.lease_expires_at > now()
      ) < p_running_cap)
    ORDER BY j.next_attempt_at, j.queued_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED;
    IF v_id IS NULL THEN
        RETURN;
    END IF;
    IF p_running_cap > 0 THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('jobs_running:' || v_account::text, 0));
        IF (SELECT count(*) FROM jobs r
            WHERE r.account_id = v_account AND r.status = 'running' AND r.lease_expires_at > now()
              AND r.id <> v_id) >= p_running_cap THEN
            RETURN;
        END IF;
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
REVOKE EXECUTE ON FUNCTION jobs_claim(text, integer, uuid, text[], integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION jobs_claim(text, integer, uuid, text[], integer) TO agentmate_app;
