-- Jobs of a kind no worker runs (a typo'd kind, a kind removed from the code, a row written by a newer API than
-- the workers while a deploy rolls out) used to wait forever, with the sweep re-sending a pointless wake-up every
-- grace period. The sweep now passes the kinds its worker runs: it only re-sends those, and retires a job of any
-- other kind once it has waited p_after_seconds (long enough for a deploy to bring the kind's worker) with a
-- reason naming the kind.

DROP FUNCTION jobs_due_for_wakeup(integer, integer);

CREATE FUNCTION jobs_due_for_wakeup(p_grace_seconds integer, p_limit integer, p_kinds text[] DEFAULT NULL)
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
          AND (p_kinds IS NULL OR j.kind = ANY (p_kinds))
        ORDER BY j.next_attempt_at, j.queued_at
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED)
    RETURNING id
$$;

-- Fails (across accounts, like the claim) the unleased unfinished jobs whose kind is not in p_kinds and that were
-- queued at least p_after_seconds ago; returns what it failed so the caller can log it.
CREATE FUNCTION jobs_fail_unregistered(p_kinds text[], p_after_seconds integer, p_limit integer)
    RETURNS TABLE (job_id uuid, account_id uuid, kind text)
    LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
    UPDATE jobs SET status = 'failed', lease_owner = NULL, lease_expires_at = NULL, finished_at = now(),
                    updated_at = now(),
                    last_error = format('no worker runs jobs of kind %s in this deployment (waited %s s); '
                                        'the job was retired instead of waiting forever', jobs.kind, p_after_seconds)
    WHERE jobs.id IN (
        SELECT j.id FROM jobs j
        WHERE j.status IN ('queued', 'running')
          AND NOT (j.kind = ANY (p_kinds))
          AND (j.lease_expires_at IS NULL OR j.lease_expires_at <= now())
          AND j.queued_at <= now() - make_interval(secs => p_after_seconds)
        ORDER BY j.queued_at
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED)
    RETURNING jobs.id, jobs.account_id, jobs.kind
$$;

REVOKE EXECUTE ON FUNCTION jobs_due_for_wakeup(integer, integer, text[]),
    jobs_fail_unregistered(text[], integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION jobs_due_for_wakeup(integer, integer, text[]),
    jobs_fail_unregistered(text[], integer, integer) TO agentmate_app;
