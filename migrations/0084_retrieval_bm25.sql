-- Lexical leg, fourth step (issue 21): a leg that ranks like a search engine.
--
-- Until now the query was `'w1' & 'w2' & …` over the `simple` configuration: every word required, stop words
-- included, no stemming, so a natural-language question ("When did Caroline go to the support group?") matched
-- almost nothing and "hybrid" search was dense-only in practice. This step keeps `lexical_text` (the shared
-- CJK-aware projection, spec/001) and its `simple` tsvector exactly as they are, and puts a second tsvector
-- beside them:
--
--   search_tsv = to_tsvector('english', lexical_text)
--
-- The projection's tokens go through Postgres' english configuration: English words are stemmed (Snowball
-- english: `deploys`, `deployed`, `deploying` → `deploy`), English stop words are dropped, and everything the
-- default parser does not route to the stemmer keeps its exact form: numbers (`2024`), words with digits
-- (`abc123`, `v2`), CJK bigrams (the parser passes them through the stemmer unchanged). Other languages' words
-- are indexed as they are written (no stemming for them yet). Being a generated column, it follows every write
-- of `lexical_text`, and this migration brings existing rows along.
--
-- retrieval_bm25_search ranks by BM25 with binary term frequency (projections repeat a token where the text
-- does, but most documents are short and a term's presence decides): any query term may match; a term weighs
-- its inverse document frequency in the caller's account and namespace; a document's weight is normalised by
-- its length (distinct lexemes) against the candidates' mean. The candidate pool is bounded by term rarity: the
-- query terms are taken rarest first, every match of the rare ones enters the pool while their summed document
-- frequencies fit it, the first term that would overflow it contributes its first remaining matches, and more
-- common terms add no candidates (they still score the candidates that contain them). A query made only of stop
-- words falls back to 0014's every-word match over the `simple` tsvector, so it still finds what it found.
--
-- The statistics are read at query time in the caller's account and namespace, without its metadata filter (a
-- memory scope borrows its account's statistics): N is counted up to 10,000; a sample of 128 documents (in
-- source-id order, random UUIDs) tells which terms are common (two hits or more), whose df is estimated from
-- it, since reading the whole GIN posting list of a word in most documents is the costliest step; every other
-- term's df is counted exactly up to the pool + 1. A namespace smaller than the sample gets exact counts from
-- it. Caps and estimates shift idf a little on very large accounts; the pool queries carry their own LIMIT, so
-- no estimate can make them read more than the pool.
--
-- As in 0011, the function reads the tenant from app_account_id() and plans each statement with literals.

ALTER TABLE retrieval_documents
    ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, lexical_text)) STORED;
CREATE INDEX retrieval_documents_search_idx ON retrieval_documents USING gin (search_tsv) WITH (fastupdate = off);

-- The query's terms: each token through the index's own configuration, in order of first appearance, stop words
-- gone. A token is parsed alone, exactly as it is inside a projection (tokens are space-separated there).
CREATE FUNCTION retrieval_search_terms(p_tokens text[]) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT coalesce(array_agg(x.lexeme ORDER BY x.ord), '{}')
    FROM (SELECT DISTINCT ON (l.lexeme) l.lexeme, t.ord
          FROM unnest(p_tokens) WITH ORDINALITY AS t (tok, ord)
          CROSS JOIN LATERAL unnest(to_tsvector('english'::regconfig, t.tok)) AS l
          ORDER BY l.lexeme, t.ord) AS x
$$;

-- One lexeme as tsquery text: quoted, so no lexeme can be read as an operator (lexemes come from projections,
-- which hold only letters and digits, but the function does not rely on it).
CREATE FUNCTION retrieval_tsquery_term(p_lexeme text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT '''' || replace(replace(p_lexeme, '\', '\\'), '''', '''''') || ''''
$$;

CREATE FUNCTION retrieval_bm25_search(p_namespace text, p_tokens text[], p_limit integer, p_source_type text,
                                      p_metadata jsonb, p_pool integer, p_fallback_tsquery text)
    RETURNS TABLE (id uuid, lexical_score real, lexical_coverage real)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    -- A pool query is `@@ term LIMIT n`: with thousands of estimated matches the planner prefers a sequential
    -- scan that stops after n, but every row it rejects costs a detoast of its tsvector (EXPLAIN ANALYZE while
    -- writing this: about ten times the bitmap scan through the GIN index at 100k rows).
    SET enable_seqscan = off
AS $$
DECLARE
    c_k1 CONSTANT float8 := 1.2;
    c_b CONSTANT float8 := 0.75;
    c_max_terms CONSTANT integer := 16;
    c_n_cap CONSTANT integer := 10000;
    c_sample CONSTANT integer := 128;
    c_common_hits CONSTANT integer := 2;
    v_account uuid := app_account_id();
    v_limit integer := least(greatest(coalesce(p_limit, 0), 0), 1000);
    v_pool integer;
    v_terms text[];
    v_scope text;
    v_filters text;
    v_n float8;
    v_df bigint[];
    v_sampled integer;
    v_hits integer[];
    v_order integer[];
    v_rare text[] := '{}';
    v_rare_query text;
    v_partial text;
    v_remaining integer;
    v_cum bigint := 0;
    v_weights text[] := '{}';
    v_matches text[] := '{}';
    v_sql text;
    i integer;
BEGIN
    IF v_account IS NULL OR p_namespace IS NULL OR v_limit = 0 THEN
        RETURN;
    END IF;
    v_pool := least(greatest(coalesce(p_pool, greatest(v_limit * 8, 400)), v_limit), 2000);
    v_terms := (retrieval_search_terms(p_tokens[1:64]))[1:c_max_terms];
    IF coalesce(cardinality(v_terms), 0) = 0 THEN
        -- Only stop words (or nothing): every word required over the simple tsvector, as before, ranking at most
        -- a pool of matches (0014's cap: "the in" matches nearly every document).
        IF p_fallback_tsquery IS NOT NULL THEN
            RETURN QUERY SELECT f.id, f.lexical_score, 1::real
                         FROM retrieval_lexical_search(p_namespace, p_fallback_tsquery, v_limit, p_source_type,
                                                       p_metadata, v_pool) AS f;
        END IF;
        RETURN;
    END IF;

    v_scope := format('d.account_id = %L AND d.namespace = %L AND d.status IN (''indexed'', ''failed'')',
                      v_account, p_namespace);
    v_filters := v_scope
        || CASE WHEN p_source_type IS NULL THEN '' ELSE format(' AND d.source_type = %L', p_source_type) END
        || CASE WHEN p_metadata IS NULL THEN '' ELSE format(' AND d.metadata @> %L::jsonb', p_metadata) END;

    -- Statistics. N: the namespace's documents, counted up to c_n_cap. A sample: the first c_sample documents in
    -- source order (source ids are random UUIDs, so it spreads over the namespace), each term's hits in it; a
    -- term hit c_common_hits times or more is common and its df is estimated from the sample (reading the GIN
    -- posting list of a word in most documents is the costliest read), any other term's df is counted
    -- exactly up to pool + 1. When the sample is the whole namespace, every df is exact without a count. An
    -- estimate can be off, so the pool's queries carry their own LIMIT: the cost stays bounded whatever it says.
    SELECT format('WITH s AS MATERIALIZED (
                       SELECT strip(d.search_tsv) AS v FROM retrieval_documents d WHERE %1$s
                       ORDER BY d.source_type, d.source_id, d.chunk_key LIMIT %2$s)
                   SELECT (SELECT count(*) FROM (SELECT 1 FROM retrieval_documents d WHERE %1$s LIMIT %3$s) n)::float8,
                          count(*)::integer, ARRAY[%4$s]::integer[]
                   FROM s',
                  v_scope, c_sample, c_n_cap,
                  string_agg(format('count(*) FILTER (WHERE s.v @@ %L::tsquery)', retrieval_tsquery_term(t.term)),
                             ', ' ORDER BY t.ord))
    INTO v_sql
    FROM unnest(v_terms) WITH ORDINALITY AS t (term, ord);
    EXECUTE v_sql INTO v_n, v_sampled, v_hits;
    IF v_sampled < c_sample THEN
        v_df := v_hits::bigint[];  -- the sample is the namespace
    ELSE
        -- Common terms estimated, the others counted (in one statement).
        SELECT format('SELECT ARRAY[%s]::bigint[]', string_agg(
                   CASE WHEN v_hits[t.ord] >= c_common_hits
                        THEN round(v_n * v_hits[t.ord] / v_sampled)::text
                        ELSE format('(SELECT count(*) FROM (SELECT 1 FROM retrieval_documents d WHERE %s
                                         AND d.search_tsv @@ %L::tsquery LIMIT %s) s)',
                                    v_scope, retrieval_tsquery_term(t.term), v_pool + 1) END,
                   ', ' ORDER BY t.ord))
        INTO v_sql
        FROM unnest(v_terms) WITH ORDINALITY AS t (term, ord);
        EXECUTE v_sql INTO v_df;
    END IF;

    -- Rarest first: whole terms while their matches fit the pool, then part of the first that does not.
    SELECT array_agg(t.ord::integer ORDER BY t.df, t.ord) INTO v_order
    FROM unnest(v_df) WITH ORDINALITY AS t (df, ord) WHERE t.df > 0;
    IF v_order IS NULL THEN
        RETURN;  -- no term occurs in this namespace
    END IF;
    FOREACH i IN ARRAY v_order LOOP
        IF v_cum + v_df[i] <= v_pool THEN
            v_rare := v_rare || retrieval_tsquery_term(v_terms[i]);
            v_cum := v_cum + v_df[i];
        ELSE
            v_partial := retrieval_tsquery_term(v_terms[i]);
            v_remaining := v_pool - v_cum;
            EXIT;
        END IF;
    END LOOP;
    -- Each matching term adds its idf (BM25's, never negative) and counts towards the coverage, the share of the
    -- query's terms (stop words aside) that the document holds: 1 means it matched every one.
    FOREACH i IN ARRAY v_order LOOP
        v_matches := v_matches || format('(c.search_tsv @@ %L::tsquery)', retrieval_tsquery_term(v_terms[i]));
        v_weights := v_weights || format('CASE WHEN %s THEN %s ELSE 0 END', v_matches[cardinality(v_matches)],
                                         ln(1 + (greatest(v_n, v_df[i]) - v_df[i] + 0.5) / (v_df[i] + 0.5)));
    END LOOP;
    v_rare_query := array_to_string(v_rare, ' | ');

    v_sql := format(
        'WITH candidates AS MATERIALIZED (
             SELECT c.id, c.updated_at, strip(c.search_tsv) AS search_tsv FROM (%s) c LIMIT %s), scored AS (
             SELECT c.id, c.updated_at, length(c.search_tsv)::float8 AS len, %s AS w, %s AS matched
             FROM candidates c)
         SELECT s.id, (s.w * %s / (1 + %s * (1 - %s + %s * s.len / greatest(avg(s.len) OVER (), 1))))::real,
                (s.matched::float8 / %s)::real
         FROM scored s
         ORDER BY 2 DESC, s.updated_at DESC, s.id
         LIMIT %s',
        concat_ws(' UNION ALL ',
            CASE WHEN v_rare_query <> '' THEN format(
                '(SELECT d.id, d.updated_at, d.search_tsv FROM retrieval_documents d
                  WHERE %s AND d.search_tsv @@ %L::tsquery LIMIT %s)', v_filters, v_rare_query, v_pool) END,
            CASE WHEN v_partial IS NOT NULL AND v_remaining > 0 THEN format(
                '(SELECT d.id, d.updated_at, d.search_tsv FROM retrieval_documents d
                  WHERE %s AND d.search_tsv @@ %L::tsquery %s LIMIT %s)',
                v_filters, v_partial,
                CASE WHEN v_rare_query <> '' THEN format('AND NOT d.search_tsv @@ %L::tsquery', v_rare_query)
                     ELSE '' END,
                v_remaining) END),
        v_pool,  -- the rare terms' matches come first; the partial term only fills what an estimate left
        array_to_string(v_weights, ' + '),
        (SELECT string_agg(format('%s::integer', m), ' + ') FROM unnest(v_matches) AS m),
        c_k1 + 1, c_k1, c_b, c_b, cardinality(v_terms), v_limit);
    RETURN QUERY EXECUTE v_sql;
END
$$;

REVOKE EXECUTE ON FUNCTION retrieval_bm25_search(text, text[], integer, text, jsonb, integer, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION retrieval_bm25_search(text, text[], integer, text, jsonb, integer, text) TO agentmate_app;

-- The admin rebuild (POST /api/admin/retrieval/lexical/rebuild) rewrites a row when its projection changed, or
-- when its stems no longer match the projection (a Postgres upgrade that changed the english dictionaries):
-- rewriting the row regenerates search_tsv.
CREATE OR REPLACE FUNCTION admin_lexical_update(p_admin_user_id uuid, p_ids uuid[], p_texts text[]) RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    v_count integer;
BEGIN
    PERFORM admin_assert(p_admin_user_id);
    UPDATE retrieval_documents d SET lexical_text = u.lexical_text
    FROM unnest(p_ids, p_texts) AS u (id, lexical_text)
    WHERE d.id = u.id
      AND (d.lexical_text IS DISTINCT FROM u.lexical_text
           OR d.search_tsv IS DISTINCT FROM to_tsvector('english'::regconfig, u.lexical_text));
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END
$$;
