-- The knowledge index's heal sweep (issue 25 §2): a knowledge_index_heal job that used up its attempts during a
-- long outage leaves its sources `partial` (knowledge_revision_index.failed_chunks > 0) with nothing queued, and
-- memory's retrieval_heal sweep, which re-embeds the chunks' retrieval rows, never rewrites the source's index
-- state. The sweep (knowledge/search/index.py: sweep_heal) queues the account's heal job again: these are the
-- accounts with an active revision whose last index run left chunks without a vector and no unfinished job of
-- p_kind, across accounts (the scheduled sweep runs under no tenant, so row-level security would hide every row),
-- oldest first. A small partial index keeps it cheap however many revisions are indexed.
CREATE INDEX IF NOT EXISTS knowledge_revision_index_failed_idx
    ON knowledge_revision_index (indexed_at)
    WHERE failed_chunks > 0;

CREATE FUNCTION knowledge_accounts_partial(p_kind text, p_limit integer)
    RETURNS TABLE (account_id uuid)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
    SELECT ix.account_id
    FROM knowledge_revision_index ix
    JOIN knowledge_sources s ON s.account_id = ix.account_id AND s.active_revision_id = ix.revision_id
    WHERE ix.failed_chunks > 0
      AND NOT EXISTS (SELECT 1 FROM jobs j
                      WHERE j.account_id = ix.account_id AND j.kind = p_kind AND j.status IN ('queued', 'running'))
    GROUP BY ix.account_id
    ORDER BY min(ix.indexed_at)
    LIMIT p_limit
$$;

REVOKE EXECUTE ON FUNCTION knowledge_accounts_partial(text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION knowledge_accounts_partial(text, integer) TO agentmate_app;
