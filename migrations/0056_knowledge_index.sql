-- Knowledge K2 retrieval: the chunk index of a revision, its document link graph, the index state per revision,
-- and the retrieval query log.
--
-- Chunk text is searched through the retrieval projection (retrieval_documents, namespace 'knowledge'), whose
-- lexical tsvector is a stored, GIN-indexed column (0010) ranked inside retrieval_lexical_search (0011/0013);
-- knowledge_chunks is the domain's own record of what the chunker produced for a revision (the projection is
-- rebuildable from it), so the tsvector is not stored twice.

CREATE TABLE knowledge_chunks (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    source_id uuid NOT NULL,
    revision_id uuid NOT NULL,
    document_id uuid NOT NULL,
    chunk_key text NOT NULL,
    ordinal integer NOT NULL,
    heading_path text NOT NULL DEFAULT '',
    content text NOT NULL,
    start_line integer NOT NULL,
    end_line integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT knowledge_chunks_document_key UNIQUE (document_id, chunk_key),
    CONSTRAINT knowledge_chunks_revision_fkey FOREIGN KEY (revision_id, source_id, account_id)
        REFERENCES knowledge_source_revisions (id, source_id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_chunks_document_fkey FOREIGN KEY (document_id, account_id)
        REFERENCES knowledge_documents (id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_chunks_key_check CHECK (chunk_key ~ '^chunk-[0-9]{4}$'),
    CONSTRAINT knowledge_chunks_ordinal_check CHECK (ordinal BETWEEN 0 AND 255),
    CONSTRAINT knowledge_chunks_lines_check CHECK (start_line >= 1 AND end_line >= start_line)
);
CREATE INDEX knowledge_chunks_revision_idx ON knowledge_chunks (account_id, source_id, revision_id);
SELECT enable_tenant_rls('knowledge_chunks');

-- One row per (linking document, target path) of an indexed revision. target_document_id is NULL for a dangling
-- link (the target path is not a document of the revision); links escaping the package are not stored.
CREATE TABLE knowledge_document_links (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    source_id uuid NOT NULL,
    revision_id uuid NOT NULL,
    source_document_id uuid NOT NULL,
    target_path text NOT NULL,
    target_document_id uuid,
    kind text NOT NULL,
    ordinal integer NOT NULL,
    CONSTRAINT knowledge_document_links_pair_key UNIQUE (source_document_id, target_path),
    CONSTRAINT knowledge_document_links_revision_fkey FOREIGN KEY (revision_id, source_id, account_id)
        REFERENCES knowledge_source_revisions (id, source_id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_document_links_source_document_fkey FOREIGN KEY (source_document_id, account_id)
        REFERENCES knowledge_documents (id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_document_links_target_document_fkey FOREIGN KEY (target_document_id, account_id)
        REFERENCES knowledge_documents (id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_document_links_kind_check CHECK (kind IN ('link', 'image', 'reference')),
    CONSTRAINT knowledge_document_links_target_path_check CHECK (char_length(target_path) BETWEEN 1 AND 1024),
    CONSTRAINT knowledge_document_links_ordinal_check CHECK (ordinal BETWEEN 0 AND 127)
);
CREATE INDEX knowledge_document_links_target_idx ON knowledge_document_links (account_id, target_document_id)
    WHERE target_document_id IS NOT NULL;
CREATE INDEX knowledge_document_links_revision_idx ON knowledge_document_links (account_id, revision_id);
SELECT enable_tenant_rls('knowledge_document_links');

-- The last completed index run of a revision (what the catalog's chunk index status reports).
CREATE TABLE knowledge_revision_index (
    revision_id uuid PRIMARY KEY,
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    source_id uuid NOT NULL,
    status text NOT NULL,
    documents integer NOT NULL,
    chunks integer NOT NULL,
    failed_chunks integer NOT NULL,
    truncated_documents integer NOT NULL,
    links integer NOT NULL,
    dangling_links integer NOT NULL,
    escaping_links integer NOT NULL,
    indexed_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT knowledge_revision_index_revision_fkey FOREIGN KEY (revision_id, source_id, account_id)
        REFERENCES knowledge_source_revisions (id, source_id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_revision_index_status_check CHECK (status IN ('indexed', 'partial')),
    CONSTRAINT knowledge_revision_index_counts_check CHECK (
        documents >= 0 AND chunks >= 0 AND failed_chunks >= 0 AND truncated_documents >= 0 AND links >= 0
        AND dangling_links >= 0 AND escaping_links >= 0)
);
CREATE INDEX knowledge_revision_index_source_idx ON knowledge_revision_index (account_id, source_id);
SELECT enable_tenant_rls('knowledge_revision_index');

-- Every search, as the anchor later signals attribute against: the query, its filters, the hits served (refs and
-- scores, never bodies) and the legs that failed. Written in the search's own transaction.
CREATE TABLE retrieval_queries (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid,
    key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
    namespace text NOT NULL,
    query text NOT NULL,
    filters jsonb NOT NULL DEFAULT '{}'::jsonb,
    top_k integer NOT NULL,
    hits jsonb NOT NULL DEFAULT '[]'::jsonb,
    hit_count integer NOT NULL,
    degraded jsonb NOT NULL DEFAULT '[]'::jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT retrieval_queries_namespace_check CHECK (namespace ~ '^[a-z][a-z0-9_]{0,63}$'),
    CONSTRAINT retrieval_queries_query_check CHECK (char_length(query) BETWEEN 1 AND 2000),
    CONSTRAINT retrieval_queries_shape_check CHECK (
        jsonb_typeof(filters) = 'object' AND jsonb_typeof(hits) = 'array' AND jsonb_typeof(degraded) = 'array'
        AND hit_count >= 0 AND top_k >= 1)
);
CREATE INDEX retrieval_queries_account_created_idx ON retrieval_queries (account_id, created_at DESC, id);
SELECT enable_tenant_rls('retrieval_queries');
