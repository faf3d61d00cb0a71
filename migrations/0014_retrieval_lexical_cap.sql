-- Lexical leg, third step: an optional bound on how many matches are ranked (issue 12, knowledge search at 100k).
--
-- A broad query's cost is reading and ranking every match: ~25 us per matching row under load (the heap row,
-- its out-of-line tsvector, ts_rank), and a query of common words (2-3 of a corpus's 150 most frequent) matches
-- a third or more of a 100k-chunk account, so 0013's function spent 300-800 ms on 17k-99k matches
-- (bench/knowledge_bench.py, EXPLAIN ANALYZE in docs/benchmarks.md). With p_rank_cap set, at most that many
-- matches are read and ranked: the first p_rank_cap rows the scan yields (physical order, not a relevance order);
-- when they fit 0013's ts_rank_cd pool (greatest(limit x 8, 400)) they are ordered by ts_rank_cd directly, else
-- the best pool of them by ts_rank first, as 0013 does. A query with no more matches than the cap is therefore
-- ranked exactly as by 0013; a broader one gets the best matches *among the capped set*, not of all matches
-- (docs/decisions.md, "The lexical leg ranks a bounded candidate set"). Knowledge search passes a cap of 400;
-- memory and skills pass none and keep 0013's behaviour exactly (0013's statement, its matches in a CTE that
-- the planner inlines).
--
-- Everything else is unchanged from 0013: the tenant comes from app_account_id(), and the statement is planned
-- with literals for this account and query. The 5-argument form is replaced (a defaulted 6th argument would make
-- a 5-argument call ambiguous between the two).
DROP FUNCTION retrieval_lexical_search(text, text, integer, text, jsonb);

CREATE FUNCTION retrieval_lexical_search(p_namespace text, p_tsquery text, p_limit integer, p_source_type text,
                                         p_metadata jsonb, p_rank_cap integer DEFAULT NULL)
    RETURNS TABLE (id uuid, lexical_score real)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    v_account uuid := app_account_id();
    v_limit integer := least(greatest(coalesce(p_limit, 0), 0), 1000);
    v_cap integer := CASE WHEN p_rank_cap IS NULL THEN NULL ELSE least(greatest(p_rank_cap, v_limit), 100000) END;
    v_pool integer := greatest(v_limit * 8, 400);  -- 0013's ts_rank_cd pool
    v_filters text;
BEGIN
    IF v_account IS NULL OR p_tsquery IS NULL OR p_namespace IS NULL OR v_limit = 0 THEN
        RETURN;
    END IF;
    v_filters := format(
        'd.account_id = %L AND d.namespace = %L AND d.status IN (''indexed'', ''failed'')
           AND d.lexical_tsv @@ to_tsquery(''simple''::regconfig, %L) %s %s',
        v_account, p_namespace, p_tsquery,
        CASE WHEN p_source_type IS NULL THEN '' ELSE format('AND d.source_type = %L', p_source_type) END,
        CASE WHEN p_metadata IS NULL THEN '' ELSE format('AND d.metadata @> %L::jsonb', p_metadata) END);
    IF v_cap IS NOT NULL AND v_cap <= v_pool THEN
        -- Every candidate fits the ts_rank_cd pool: 0013 would re-rank all of them, so rank them directly.
        RETURN QUERY EXECUTE format(
            'WITH candidates AS (
                 SELECT d.id, d.lexical_tsv, d.updated_at
                 FROM retrieval_documents d
                 WHERE %1$s
                 LIMIT %3$s)
             SELECT c.id, ts_rank_cd(c.lexical_tsv, to_tsquery(''simple''::regconfig, %2$L))
             FROM candidates c
             ORDER BY 2 DESC, c.updated_at DESC, c.id
             LIMIT %4$s',
            v_filters, p_tsquery, v_cap, v_limit);
    ELSE
        -- 0013's statement (without a cap the candidates CTE is every match, inlined by the planner), or the
        -- same over the first v_cap matches.
        RETURN QUERY EXECUTE format(
            'WITH candidates AS (
                 SELECT d.id, d.lexical_tsv, d.updated_at
                 FROM retrieval_documents d
                 WHERE %1$s %3$s
             ), matched AS (
                 SELECT c.id, c.lexical_tsv, c.updated_at
                 FROM candidates c
                 ORDER BY ts_rank(c.lexical_tsv, to_tsquery(''simple''::regconfig, %2$L)) DESC, c.updated_at DESC,
                          c.id
                 LIMIT %4$s)
             SELECT m.id, ts_rank_cd(m.lexical_tsv, to_tsquery(''simple''::regconfig, %2$L))
             FROM matched m
             ORDER BY 2 DESC, m.updated_at DESC, m.id
             LIMIT %5$s',
            v_filters, p_tsquery, CASE WHEN v_cap IS NULL THEN '' ELSE format('LIMIT %s', v_cap) END, v_pool,
            v_limit);
    END IF;
END
$$;

REVOKE EXECUTE ON FUNCTION retrieval_lexical_search(text, text, integer, text, jsonb, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION retrieval_lexical_search(text, text, integer, text, jsonb, integer) TO agentmate_app;
