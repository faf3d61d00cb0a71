-- The re-embed job (issue 25 §2) reads and counts an account's projections still waiting for their vector
-- (failed, or pending past a grace): a small partial index keeps both cheap however large the account's index.
CREATE INDEX IF NOT EXISTS retrieval_documents_waiting_idx
    ON retrieval_documents (account_id, id)
    WHERE status IN ('failed', 'pending');

-- The heal sweep (issue 25 §2): accounts with projections waiting for longer than p_stale_seconds (a fresh failure
-- has queued its own job) and no unfinished heal job, across accounts (the scheduled sweep runs under no tenant,
-- so row-level security would hide every row), oldest first.
CREATE FUNCTION retrieval_accounts_waiting(p_kind text, p_stale_seconds integer, p_limit integer)
    RETURNS TABLE (account_id uuid)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
    SELECT d.account_id
    FROM retrieval_documents d
    WHERE d.status IN ('failed', 'pending') AND d.updated_at < now() - make_interval(secs => p_stale_seconds)
      AND NOT EXISTS (SELECT 1 FROM jobs j
                      WHERE j.account_id = d.account_id AND j.kind = p_kind AND j.status IN ('queued', 'running'))
    GROUP BY d.account_id
    ORDER BY min(d.updated_at)
    LIMIT p_limit
$$;

REVOKE EXECUTE ON FUNCTION retrieval_accounts_waiting(text, integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION retrieval_accounts_waiting(text, integer, integer) TO agentmate_app;
