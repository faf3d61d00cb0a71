-- Knowledge K4: resolution runs (spec/001 "POST /api/knowledge/resolutions", prior-art §3 migration 35).
--
-- A run freezes what one execution of a skill resolved for one requirement of its knowledge contract: the
-- discovery it followed (fingerprint + status), the bases it selected, what it retrieved and cited (references
-- only). Runs are audit rows: append-only for the application, and their targets cannot be deleted under them
-- (NO ACTION foreign keys, checked at statement end: deleting the skill version or a selected source alone is
-- refused, while an account deletion removes the runs in the same statement and passes).

CREATE TABLE knowledge_resolution_runs (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid,
    key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
    skill_version_id uuid NOT NULL,
    session_id text NOT NULL DEFAULT '',
    requirement_id text NOT NULL,
    contract_identity text NOT NULL,
    discovery_fingerprint text NOT NULL,
    discovery_status text NOT NULL,
    fingerprint_current boolean NOT NULL,
    candidates jsonb NOT NULL DEFAULT '[]',
    selected jsonb NOT NULL DEFAULT '[]',
    retrieved jsonb NOT NULL DEFAULT '[]',
    citations jsonb NOT NULL DEFAULT '[]',
    selection_reason text NOT NULL DEFAULT '',
    confidence double precision,
    idempotency_key text,
    content_hash text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT knowledge_resolution_runs_id_account_key UNIQUE (id, account_id),
    CONSTRAINT knowledge_resolution_runs_version_fkey FOREIGN KEY (skill_version_id, account_id)
        REFERENCES skill_versions (id, account_id),
    CONSTRAINT knowledge_resolution_runs_session_id_check CHECK (char_length(session_id) <= 200),
    CONSTRAINT knowledge_resolution_runs_requirement_id_check CHECK (char_length(requirement_id) BETWEEN 1 AND 64),
    CONSTRAINT knowledge_resolution_runs_fingerprint_check CHECK (discovery_fingerprint ~ '^[0-9a-f]{64}$'),
    CONSTRAINT knowledge_resolution_runs_status_check CHECK (discovery_status IN ('matched', 'ambiguous',
        'no_metadata_match', 'no_authorized_knowledge', 'pinned_resolved', 'pinned_missing')),
    CONSTRAINT knowledge_resolution_runs_evidence_check CHECK (jsonb_typeof(candidates) = 'array'
        AND jsonb_typeof(selected) = 'array' AND jsonb_typeof(retrieved) = 'array'
        AND jsonb_typeof(citations) = 'array'
        AND octet_length(candidates::text) + octet_length(selected::text) + octet_length(retrieved::text)
            + octet_length(citations::text) <= 262144),
    CONSTRAINT knowledge_resolution_runs_selection_reason_check CHECK (char_length(selection_reason) <= 2000),
    CONSTRAINT knowledge_resolution_runs_confidence_check CHECK (confidence IS NULL
        OR (confidence >= 0 AND confidence <= 1)),
    CONSTRAINT knowledge_resolution_runs_idempotency_key_check CHECK (idempotency_key IS NULL
        OR char_length(idempotency_key) BETWEEN 1 AND 255),
    CONSTRAINT knowledge_resolution_runs_content_hash_check CHECK (content_hash ~ '^[0-9a-f]{64}$')
);
-- A second guard behind core.idempotency's reservation: one run per key and account.
CREATE UNIQUE INDEX knowledge_resolution_runs_idempotency_key ON knowledge_resolution_runs (account_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX knowledge_resolution_runs_created_idx ON knowledge_resolution_runs (account_id, created_at DESC, id DESC);
CREATE INDEX knowledge_resolution_runs_version_idx
    ON knowledge_resolution_runs (account_id, skill_version_id, created_at DESC, id DESC);
CREATE INDEX knowledge_resolution_runs_session_idx ON knowledge_resolution_runs (account_id, session_id, created_at DESC)
    WHERE session_id <> '';
SELECT enable_tenant_rls('knowledge_resolution_runs');

-- The verified selections of a run, one row per selected base: what the source_id filter reads ("which
-- executions rested on this knowledge base") and what keeps a referenced source and revision from being
-- deleted (NO ACTION). The run's ``selected`` array is the same list as the client saw it echoed back.
CREATE TABLE knowledge_resolution_selections (
    run_id uuid NOT NULL,
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    position smallint NOT NULL,
    source_id uuid NOT NULL,
    revision_id uuid,
    PRIMARY KEY (run_id, position),
    CONSTRAINT knowledge_resolution_selections_run_fkey FOREIGN KEY (run_id, account_id)
        REFERENCES knowledge_resolution_runs (id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_resolution_selections_source_fkey FOREIGN KEY (source_id, account_id)
        REFERENCES knowledge_sources (id, account_id),
    CONSTRAINT knowledge_resolution_selections_revision_fkey FOREIGN KEY (revision_id, source_id, account_id)
        REFERENCES knowledge_source_revisions (id, source_id, account_id),
    CONSTRAINT knowledge_resolution_selections_run_source_key UNIQUE (run_id, source_id),
    CONSTRAINT knowledge_resolution_selections_position_check CHECK (position >= 0)
);
CREATE INDEX knowledge_resolution_selections_source_idx ON knowledge_resolution_selections (account_id, source_id);
SELECT enable_tenant_rls('knowledge_resolution_selections');

-- Append-only for the application: runs are inserted and read, never rewritten or removed (the account's
-- cascade runs with the table owner's rights).
REVOKE UPDATE, DELETE ON knowledge_resolution_runs, knowledge_resolution_selections FROM agentmate_app;
