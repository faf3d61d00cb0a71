-- The lexical leg as a SECURITY DEFINER function, so its full-text match can use the GIN index.
--
-- Under row-level security Postgres evaluates the policy (account_id = app_account_id()) before any qual whose
-- operator is not LEAKPROOF, and `tsvector @@ tsquery` is not: planned as the application role the search became a
-- sequential scan of the account's rows (26 ms at 20k documents, growing linearly). Inside this function (owned
-- by the migration owner, which bypasses RLS) the match is an index condition again. The function still confines
-- itself to the transaction's tenant: it reads app_account_id() itself rather than taking an account argument,
-- so no caller can point it at another account, and an unset account matches nothing.
CREATE FUNCTION retrieval_lexical_search(p_namespace text, p_tsquery text, p_limit integer, p_source_type text,
                                         p_metadata jsonb)
    RETURNS TABLE (id uuid, lexical_score real)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
    SELECT d.id, ts_rank_cd(d.lexical_tsv, q.query)
    FROM retrieval_documents d, to_tsquery('simple'::regconfig, p_tsquery) AS q (query)
    WHERE d.account_id = app_account_id()
      AND d.namespace = p_namespace
      AND d.status IN ('indexed', 'failed')
      AND d.lexical_tsv @@ q.query
      AND (p_source_type IS NULL OR d.source_type = p_source_type)
      AND (p_metadata IS NULL OR d.metadata @> p_metadata)
    ORDER BY 2 DESC, d.updated_at DESC, d.id
    LIMIT least(greatest(p_limit, 0), 1000)
$$;

REVOKE EXECUTE ON FUNCTION retrieval_lexical_search(text, text, integer, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION retrieval_lexical_search(text, text, integer, text, jsonb) TO agentmate_app;
