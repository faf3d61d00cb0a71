-- Retrieval projection: one row per indexed chunk of a source record (memory entries, skills, knowledge …).
-- Postgres is the source of truth; the vector index holds a rebuildable copy keyed by point_id.
-- status: pending (being indexed: invisible to both legs), indexed (both legs), failed (lexical leg only).

CREATE TABLE retrieval_documents (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    namespace text NOT NULL,
    source_type text NOT NULL,
    source_id text NOT NULL,
    chunk_key text NOT NULL DEFAULT 'default',
    title text NOT NULL DEFAULT '',
    content text NOT NULL DEFAULT '',
    content_hash text NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
    status text NOT NULL DEFAULT 'pending',
    error text,
    -- CJK-bigram projection of title + content (agentmate.retrieval.lexical.projection); '' = not projected yet.
    lexical_text text NOT NULL DEFAULT '',
    -- The tsvector of lexical_text, stored so ranking never re-parses the text (GIN-indexed below).
    lexical_tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, lexical_text)) STORED,
    point_id uuid NOT NULL DEFAULT gen_random_uuid(),
    vector_collection text,
    embedding_model text,
    embedding_dimension integer,
    indexed_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT retrieval_documents_id_account_key UNIQUE (id, account_id),
    CONSTRAINT retrieval_documents_source_key UNIQUE (account_id, namespace, source_type, source_id, chunk_key),
    CONSTRAINT retrieval_documents_point_key UNIQUE (point_id),
    CONSTRAINT retrieval_documents_status_check CHECK (status IN ('pending', 'indexed', 'failed')),
    CONSTRAINT retrieval_documents_namespace_check CHECK (namespace ~ '^[a-z][a-z0-9_]{0,63}$'),
    CONSTRAINT retrieval_documents_source_type_check CHECK (char_length(source_type) BETWEEN 1 AND 64),
    CONSTRAINT retrieval_documents_source_id_check CHECK (char_length(source_id) BETWEEN 1 AND 512),
    CONSTRAINT retrieval_documents_chunk_key_check CHECK (char_length(chunk_key) BETWEEN 1 AND 512),
    CONSTRAINT retrieval_documents_metadata_check CHECK (jsonb_typeof(metadata) = 'object'),
    CONSTRAINT retrieval_documents_embedding_dimension_check CHECK (embedding_dimension IS NULL OR embedding_dimension > 0)
);
CREATE INDEX retrieval_documents_lexical_idx ON retrieval_documents USING gin (lexical_tsv);
CREATE INDEX retrieval_documents_account_namespace_idx ON retrieval_documents (account_id, namespace, status);
SELECT enable_tenant_rls('retrieval_documents');

-- Operator repair of the lexical projection across accounts (POST /api/admin/retrieval/lexical/rebuild).
-- The projection is computed in Python (the same code as the write path), so the database side is two
-- SECURITY DEFINER functions: read a batch of rows in id order (locking them), then write projections back.
-- Both refuse unless the calling transaction's account (app.account_id) has the given user as an admin,
-- so a bug elsewhere in the application cannot use them to read across tenants.
CREATE FUNCTION admin_assert(p_user_id uuid) RETURNS void
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM users u
                   WHERE u.id = p_user_id AND u.account_id = app_account_id() AND u.role = 'admin') THEN
        RAISE EXCEPTION 'admin access required' USING ERRCODE = '42501';
    END IF;
END
$$;

CREATE FUNCTION admin_lexical_batch(p_admin_user_id uuid, p_account_id uuid, p_namespace text, p_after uuid,
                                    p_limit integer)
    RETURNS TABLE (id uuid, title text, content text, lexical_text text)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    PERFORM admin_assert(p_admin_user_id);
    RETURN QUERY
        SELECT d.id, d.title, d.content, d.lexical_text
        FROM retrieval_documents d
        WHERE (p_account_id IS NULL OR d.account_id = p_account_id)
          AND (p_namespace IS NULL OR d.namespace = p_namespace)
          AND (p_after IS NULL OR d.id > p_after)
        ORDER BY d.id
        LIMIT greatest(1, least(p_limit, 1000))
        FOR UPDATE OF d;
END
$$;

CREATE FUNCTION admin_lexical_update(p_admin_user_id uuid, p_ids uuid[], p_texts text[]) RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    v_count integer;
BEGIN
    PERFORM admin_assert(p_admin_user_id);
    UPDATE retrieval_documents d SET lexical_text = u.lexical_text
    FROM unnest(p_ids, p_texts) AS u (id, lexical_text)
    WHERE d.id = u.id AND d.lexical_text IS DISTINCT FROM u.lexical_text;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END
$$;

REVOKE EXECUTE ON FUNCTION admin_assert(uuid), admin_lexical_batch(uuid, uuid, text, uuid, integer),
    admin_lexical_update(uuid, uuid[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admin_lexical_batch(uuid, uuid, text, uuid, integer),
    admin_lexical_update(uuid, uuid[], text[]) TO agentmate_app;
