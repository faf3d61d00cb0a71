-- The lexical leg as a SECURITY DEFINER function, so its full-text match can use the GIN index.
--
-- Under row-level security Postgres evaluates the policy (account_id = app_account_id()) before any qual whose
-- operator is not LEAKPROOF, and `tsvector @@ tsquery` is not: planned as the application role the search is a
-- scan of all the account's rows (26 ms at 20k documents, growing linearly). Inside this function (owned by the
-- migration owner, which bypasses RLS) the match is an index condition again.
--
-- The function confines itself to the transaction's tenant: it reads app_account_id() itself instead of taking
-- an account argument, so no caller can point it at another account, and an unset account matches nothing.
-- The statement is built with literals (format %L) so it is planned for this account and this tsquery: with a
-- parameter the planner would guess an average tenant size and could prefer the account btree over the GIN
-- index exactly for the largest tenants.
CREATE FUNCTION retrieval_lexical_search(p_namespace text, p_tsquery text, p_limit integer, p_source_type text,
                                         p_metadata jsonb)
    RETURNS TABLE (id uuid, lexical_score real)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    v_account uuid := app_account_id();
BEGIN
    IF v_account IS NULL OR p_tsquery IS NULL OR p_namespace IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE format(
        'SELECT d.id, ts_rank_cd(d.lexical_tsv, q.query)
         FROM retrieval_documents d, to_tsquery(''simple''::regconfig, %L) AS q (query)
         WHERE d.account_id = %L AND d.namespace = %L AND d.status IN (''indexed'', ''failed'')
           AND d.lexical_tsv @@ q.query %s %s
         ORDER BY 2 DESC, d.updated_at DESC, d.id
         LIMIT %s',
        p_tsquery, v_account, p_namespace,
        CASE WHEN p_source_type IS NULL THEN '' ELSE format('AND d.source_type = %L', p_source_type) END,
        CASE WHEN p_metadata IS NULL THEN '' ELSE format('AND d.metadata @> %L::jsonb', p_metadata) END,
        least(greatest(coalesce(p_limit, 0), 0), 1000));
END
$$;

REVOKE EXECUTE ON FUNCTION retrieval_lexical_search(text, text, integer, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION retrieval_lexical_search(text, text, integer, text, jsonb) TO agentmate_app;
