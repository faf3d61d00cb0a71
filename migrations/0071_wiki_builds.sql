-- Wiki compiler K3 (spec/001 "Wiki compiler (K3)", prior-art §3 migrations 27-29): profile versions, immutable
-- builds with full provenance, pages with citations and typed links, the ordered build log, and the source's
-- active/indexed build pointers. A build row's own status is what users see; job_id names the queue's job that
-- runs it (the foreign key arrives with the jobs table).

-- A profile version is immutable: changing any setting makes a new version, so a build's provenance names
-- exactly the rules its check applied.
CREATE TABLE knowledge_profile_versions (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name text NOT NULL,
    version integer NOT NULL,
    allowed_page_kinds text[] NOT NULL,
    allowed_link_types text[] NOT NULL,
    citation_policy text NOT NULL,
    max_pages integer NOT NULL,
    max_page_chars integer NOT NULL,
    max_build_tokens integer NOT NULL,
    max_page_count_drift numeric(4, 3) NOT NULL,
    settings_hash text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT knowledge_profile_versions_id_account_key UNIQUE (id, account_id),
    CONSTRAINT knowledge_profile_versions_name_version_key UNIQUE (account_id, name, version),
    CONSTRAINT knowledge_profile_versions_settings_key UNIQUE (account_id, name, settings_hash),
    CONSTRAINT knowledge_profile_versions_name_check CHECK (char_length(name) BETWEEN 1 AND 64),
    CONSTRAINT knowledge_profile_versions_policy_check CHECK (citation_policy IN ('required', 'preferred', 'optional')),
    CONSTRAINT knowledge_profile_versions_limits_check CHECK (version >= 1 AND max_pages BETWEEN 1 AND 5000
        AND max_page_chars >= 1 AND max_build_tokens >= 1 AND max_page_count_drift > 0 AND max_page_count_drift <= 1)
);
SELECT enable_tenant_rls('knowledge_profile_versions');

CREATE TABLE knowledge_builds (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid,
    key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
    source_id uuid NOT NULL,
    source_revision_id uuid NOT NULL,
    raw_package_hash text NOT NULL,
    profile_version_id uuid NOT NULL,
    compiler_version text NOT NULL,
    prompt_version text NOT NULL,
    model text NOT NULL,
    reviewer_model text,
    reviewer_independence text NOT NULL,
    parent_build_id uuid,
    mode text NOT NULL,
    status text NOT NULL DEFAULT 'queued',
    check_status text NOT NULL DEFAULT 'pending',
    check_failures jsonb NOT NULL DEFAULT '[]',
    review_status text NOT NULL DEFAULT 'skipped',
    activate_on_success boolean NOT NULL DEFAULT true,
    forced boolean NOT NULL DEFAULT false,
    job_id uuid,
    attempts integer NOT NULL DEFAULT 0,
    attempt_usage jsonb NOT NULL DEFAULT '[]',
    pages_written integer NOT NULL DEFAULT 0,
    pages_reused integer NOT NULL DEFAULT 0,
    input_tokens bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    cost_micros bigint NOT NULL DEFAULT 0,
    cost_priced boolean NOT NULL DEFAULT false,
    impact jsonb,
    error text,
    queued_at timestamptz NOT NULL DEFAULT now(),
    started_at timestamptz,
    finished_at timestamptz,
    CONSTRAINT knowledge_builds_id_account_key UNIQUE (id, account_id),
    CONSTRAINT knowledge_builds_id_source_account_key UNIQUE (id, source_id, account_id),
    CONSTRAINT knowledge_builds_source_fkey FOREIGN KEY (source_id, account_id)
        REFERENCES knowledge_sources (id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_builds_revision_fkey FOREIGN KEY (source_revision_id, source_id, account_id)
        REFERENCES knowledge_source_revisions (id, source_id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_builds_profile_fkey FOREIGN KEY (profile_version_id, account_id)
        REFERENCES knowledge_profile_versions (id, account_id),
    CONSTRAINT knowledge_builds_parent_fkey FOREIGN KEY (parent_build_id, source_id, account_id)
        REFERENCES knowledge_builds (id, source_id, account_id),
    CONSTRAINT knowledge_builds_mode_check CHECK (mode IN ('full', 'incremental')),
    CONSTRAINT knowledge_builds_status_check CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    CONSTRAINT knowledge_builds_check_status_check CHECK (check_status IN ('pending', 'passed', 'failed')),
    CONSTRAINT knowledge_builds_review_status_check CHECK (review_status IN ('skipped', 'clean', 'partial', 'flagged',
        'failed')),
    CONSTRAINT knowledge_builds_independence_check CHECK (reviewer_independence IN ('cross_provider',
        'same_provider', 'same_model', 'unavailable')),
    CONSTRAINT knowledge_builds_hash_check CHECK (raw_package_hash ~ '^[0-9a-f]{64}$'),
    CONSTRAINT knowledge_builds_counts_check CHECK (attempts >= 0 AND pages_written >= 0 AND pages_reused >= 0
        AND input_tokens >= 0 AND output_tokens >= 0 AND cost_micros >= 0),
    CONSTRAINT knowledge_builds_json_check CHECK (jsonb_typeof(check_failures) = 'array'
        AND jsonb_typeof(attempt_usage) = 'array' AND (impact IS NULL OR jsonb_typeof(impact) = 'object')),
    CONSTRAINT knowledge_builds_incremental_parent_check CHECK (mode = 'full' OR parent_build_id IS NOT NULL)
);
CREATE INDEX knowledge_builds_source_idx ON knowledge_builds (account_id, source_id, queued_at DESC, id);
-- Input-identity reuse (prior-art §4.8) looks up live and succeeded builds by their identity.
CREATE INDEX knowledge_builds_identity_idx ON knowledge_builds (account_id, source_id, source_revision_id,
    profile_version_id, model, mode) WHERE status IN ('queued', 'running', 'succeeded');
SELECT enable_tenant_rls('knowledge_builds');

-- A finished build is immutable: its provenance, verdict and spend are what an audit reads later.
CREATE FUNCTION knowledge_builds_immutable() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    IF OLD.status IN ('succeeded', 'failed', 'cancelled') AND NEW IS DISTINCT FROM OLD THEN
        RAISE EXCEPTION 'knowledge build % is finished and immutable', OLD.id USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER knowledge_builds_immutable BEFORE UPDATE ON knowledge_builds
    FOR EACH ROW EXECUTE FUNCTION knowledge_builds_immutable();

CREATE TABLE knowledge_pages (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    build_id uuid NOT NULL,
    path text NOT NULL,
    kind text NOT NULL,
    title text NOT NULL,
    content text NOT NULL,
    content_hash text NOT NULL,
    derived_from_build_id uuid,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT knowledge_pages_id_account_key UNIQUE (id, account_id),
    CONSTRAINT knowledge_pages_id_build_account_key UNIQUE (id, build_id, account_id),
    CONSTRAINT knowledge_pages_build_path_key UNIQUE (build_id, path),
    CONSTRAINT knowledge_pages_build_fkey FOREIGN KEY (build_id, account_id)
        REFERENCES knowledge_builds (id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_pages_derived_fkey FOREIGN KEY (derived_from_build_id, account_id)
        REFERENCES knowledge_builds (id, account_id) ON DELETE SET NULL (derived_from_build_id),
    CONSTRAINT knowledge_pages_path_check CHECK (char_length(path) BETWEEN 1 AND 512),
    CONSTRAINT knowledge_pages_hash_check CHECK (content_hash ~ '^[0-9a-f]{64}$')
);
SELECT enable_tenant_rls('knowledge_pages');

CREATE TABLE knowledge_page_citations (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    build_id uuid NOT NULL,
    page_id uuid NOT NULL,
    ordinal integer NOT NULL,
    document_id uuid,
    document_path text NOT NULL,
    heading_path text NOT NULL DEFAULT '',
    claim text NOT NULL DEFAULT '',
    excerpt text NOT NULL DEFAULT '',
    CONSTRAINT knowledge_page_citations_page_fkey FOREIGN KEY (page_id, build_id, account_id)
        REFERENCES knowledge_pages (id, build_id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_page_citations_document_fkey FOREIGN KEY (document_id, account_id)
        REFERENCES knowledge_documents (id, account_id) ON DELETE SET NULL (document_id),
    CONSTRAINT knowledge_page_citations_page_ordinal_key UNIQUE (page_id, ordinal)
);
CREATE INDEX knowledge_page_citations_build_path_idx ON knowledge_page_citations (account_id, build_id, document_path);
SELECT enable_tenant_rls('knowledge_page_citations');

-- Typed links between pages of one build; target_page_id is NULL only for a dangling target (check refuses a
-- build with one, so stored builds keep them only if the rule set ever changes).
CREATE TABLE knowledge_page_links (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    build_id uuid NOT NULL,
    source_page_id uuid NOT NULL,
    ordinal integer NOT NULL,
    target_page_id uuid,
    target_path text NOT NULL,
    link_type text NOT NULL,
    CONSTRAINT knowledge_page_links_source_fkey FOREIGN KEY (source_page_id, build_id, account_id)
        REFERENCES knowledge_pages (id, build_id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_page_links_target_fkey FOREIGN KEY (target_page_id, build_id, account_id)
        REFERENCES knowledge_pages (id, build_id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_page_links_source_ordinal_key UNIQUE (source_page_id, ordinal)
);
CREATE INDEX knowledge_page_links_target_idx ON knowledge_page_links (account_id, build_id, target_page_id);
SELECT enable_tenant_rls('knowledge_page_links');

CREATE TABLE knowledge_build_events (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    build_id uuid NOT NULL,
    sequence_no integer NOT NULL,
    event_type text NOT NULL,
    page_path text,
    detail text NOT NULL DEFAULT '',
    payload jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT knowledge_build_events_build_fkey FOREIGN KEY (build_id, account_id)
        REFERENCES knowledge_builds (id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_build_events_sequence_key UNIQUE (build_id, sequence_no),
    CONSTRAINT knowledge_build_events_payload_check CHECK (jsonb_typeof(payload) = 'object')
);
SELECT enable_tenant_rls('knowledge_build_events');

ALTER TABLE knowledge_sources
    ADD COLUMN active_build_id uuid,
    ADD COLUMN indexed_build_id uuid,
    ADD COLUMN wiki_indexed_at timestamptz,
    ADD CONSTRAINT knowledge_sources_active_build_fkey FOREIGN KEY (active_build_id, id, account_id)
        REFERENCES knowledge_builds (id, source_id, account_id),
    ADD CONSTRAINT knowledge_sources_indexed_build_fkey FOREIGN KEY (indexed_build_id, id, account_id)
        REFERENCES knowledge_builds (id, source_id, account_id);
