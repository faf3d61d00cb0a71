-- Memory: the immutable event journal, evidence-backed durable entries, their evidence and feedback signals.
-- skill_version_id columns get their foreign keys in 0015_skills.sql (skill_versions is created there).

CREATE TABLE memory_events (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid,
    key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
    scope_type text NOT NULL DEFAULT 'global',
    scope_key text NOT NULL DEFAULT '',
    session_id text NOT NULL DEFAULT '',
    sequence_no bigint,
    event_type text NOT NULL,
    payload jsonb NOT NULL DEFAULT '{}'::jsonb,
    source_type text NOT NULL DEFAULT '',
    source_id text NOT NULL DEFAULT '',
    occurred_at timestamptz NOT NULL DEFAULT now(),
    idempotency_key text NOT NULL,
    content_hash text NOT NULL,
    skill_version_id uuid,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT memory_events_id_account_key UNIQUE (id, account_id),
    CONSTRAINT memory_events_idempotency_key UNIQUE (account_id, idempotency_key),
    CONSTRAINT memory_events_scope_type_check
        CHECK (scope_type IN ('global', 'project', 'repository', 'agent', 'session')),
    CONSTRAINT memory_events_scope_key_check CHECK (scope_type = 'global' OR scope_key <> ''),
    CONSTRAINT memory_events_event_type_check CHECK (event_type IN (
        'goal', 'observation', 'action', 'decision', 'issue', 'attempt', 'outcome', 'correction', 'checkpoint', 'note')),
    CONSTRAINT memory_events_sequence_no_check CHECK (sequence_no IS NULL OR (sequence_no >= 0 AND session_id <> '')),
    CONSTRAINT memory_events_source_check CHECK ((source_type = '') = (source_id = '')),
    CONSTRAINT memory_events_idempotency_key_check CHECK (char_length(idempotency_key) BETWEEN 1 AND 512),
    CONSTRAINT memory_events_payload_check CHECK (jsonb_typeof(payload) = 'object')
);
CREATE UNIQUE INDEX memory_events_session_sequence_key ON memory_events (account_id, session_id, sequence_no)
    WHERE session_id <> '' AND sequence_no IS NOT NULL;
CREATE INDEX memory_events_account_occurred_idx ON memory_events (account_id, occurred_at DESC, created_at DESC);
CREATE INDEX memory_events_scope_idx ON memory_events (account_id, scope_type, scope_key, occurred_at DESC);
CREATE INDEX memory_events_session_idx ON memory_events (account_id, session_id, occurred_at)
    WHERE session_id <> '';
CREATE INDEX memory_events_skill_version_idx ON memory_events (account_id, skill_version_id, occurred_at)
    WHERE skill_version_id IS NOT NULL;
SELECT enable_tenant_rls('memory_events');
-- The journal is append-only for the application (foreign-key actions run as the table owner).
REVOKE UPDATE, DELETE ON memory_events FROM agentmate_app;

CREATE TABLE memory_entries (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid,
    key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
    scope_type text NOT NULL DEFAULT 'global',
    scope_key text NOT NULL DEFAULT '',
    memory_type text NOT NULL,
    title text NOT NULL DEFAULT '',
    content text NOT NULL,
    summary text NOT NULL DEFAULT '',
    content_hash text NOT NULL,
    confidence double precision NOT NULL DEFAULT 0.5,
    importance double precision NOT NULL DEFAULT 0.5,
    status text NOT NULL DEFAULT 'active',
    metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
    ttl_at timestamptz,
    last_accessed_at timestamptz,
    valid_from timestamptz NOT NULL DEFAULT now(),
    valid_to timestamptz,
    superseded_by uuid,
    source_event_id uuid,
    extraction_method text NOT NULL DEFAULT 'explicit',
    extractor_version text NOT NULL DEFAULT '',
    access_count bigint NOT NULL DEFAULT 0,
    useful_count bigint NOT NULL DEFAULT 0,
    harmful_count bigint NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT memory_entries_id_account_key UNIQUE (id, account_id),
    CONSTRAINT memory_entries_superseded_by_fkey FOREIGN KEY (superseded_by, account_id)
        REFERENCES memory_entries (id, account_id) ON DELETE SET NULL (superseded_by),
    CONSTRAINT memory_entries_source_event_fkey FOREIGN KEY (source_event_id, account_id)
        REFERENCES memory_events (id, account_id) ON DELETE SET NULL (source_event_id),
    CONSTRAINT memory_entries_scope_type_check
        CHECK (scope_type IN ('global', 'project', 'repository', 'agent', 'session')),
    CONSTRAINT memory_entries_scope_key_check CHECK (scope_type = 'global' OR scope_key <> ''),
    CONSTRAINT memory_entries_memory_type_check CHECK (memory_type IN ('semantic', 'episodic', 'procedural')),
    CONSTRAINT memory_entries_status_check
        CHECK (status IN ('pending', 'active', 'superseded', 'invalidated', 'archived', 'expired')),
    CONSTRAINT memory_entries_extraction_method_check CHECK (extraction_method IN ('explicit', 'rule', 'llm', 'dream')),
    CONSTRAINT memory_entries_confidence_check CHECK (confidence BETWEEN 0 AND 1),
    CONSTRAINT memory_entries_importance_check CHECK (importance BETWEEN 0 AND 1),
    CONSTRAINT memory_entries_validity_check CHECK (valid_to IS NULL OR valid_to >= valid_from),
    CONSTRAINT memory_entries_not_self_superseded_check CHECK (superseded_by IS NULL OR superseded_by <> id),
    CONSTRAINT memory_entries_counters_check CHECK (access_count >= 0 AND useful_count >= 0 AND harmful_count >= 0),
    CONSTRAINT memory_entries_metadata_check CHECK (jsonb_typeof(metadata) = 'object'),
    CONSTRAINT memory_entries_content_check CHECK (char_length(content) >= 1)
);
CREATE INDEX memory_entries_list_idx ON memory_entries (account_id, importance DESC, updated_at DESC);
CREATE INDEX memory_entries_scope_idx ON memory_entries (account_id, scope_type, scope_key, status);
CREATE INDEX memory_entries_source_event_idx ON memory_entries (account_id, source_event_id)
    WHERE source_event_id IS NOT NULL;
CREATE INDEX memory_entries_superseded_by_idx ON memory_entries (account_id, superseded_by)
    WHERE superseded_by IS NOT NULL;
SELECT enable_tenant_rls('memory_entries');

CREATE TABLE memory_evidence (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid,
    key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
    memory_id uuid NOT NULL,
    source_type text NOT NULL,
    source_id text NOT NULL,
    excerpt text NOT NULL DEFAULT '',
    metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT memory_evidence_memory_fkey FOREIGN KEY (memory_id, account_id)
        REFERENCES memory_entries (id, account_id) ON DELETE CASCADE,
    CONSTRAINT memory_evidence_source_type_check CHECK (char_length(source_type) BETWEEN 1 AND 64),
    CONSTRAINT memory_evidence_source_id_check CHECK (char_length(source_id) BETWEEN 1 AND 1000),
    CONSTRAINT memory_evidence_metadata_check CHECK (jsonb_typeof(metadata) = 'object')
);
CREATE INDEX memory_evidence_memory_idx ON memory_evidence (account_id, memory_id, created_at);
SELECT enable_tenant_rls('memory_evidence');

CREATE TABLE memory_feedback (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid,
    key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
    memory_id uuid NOT NULL,
    signal text NOT NULL,
    reason text NOT NULL DEFAULT '',
    session_id text NOT NULL DEFAULT '',
    skill_version_id uuid,
    metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
    observed_at timestamptz NOT NULL DEFAULT now(),
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT memory_feedback_memory_fkey FOREIGN KEY (memory_id, account_id)
        REFERENCES memory_entries (id, account_id) ON DELETE CASCADE,
    -- One signal of each kind per memory per session: a retrying agent cannot inflate a memory's standing.
    CONSTRAINT memory_feedback_once_key UNIQUE (account_id, memory_id, session_id, signal),
    CONSTRAINT memory_feedback_signal_check CHECK (signal IN ('useful', 'harmful')),
    CONSTRAINT memory_feedback_reason_check CHECK (char_length(reason) <= 2000),
    CONSTRAINT memory_feedback_metadata_check CHECK (jsonb_typeof(metadata) = 'object')
);
CREATE INDEX memory_feedback_memory_idx ON memory_feedback (account_id, memory_id, created_at DESC);
SELECT enable_tenant_rls('memory_feedback');
-- Signals are the durable record (counters on memory_entries are their projection): append-only.
REVOKE UPDATE, DELETE ON memory_feedback FROM agentmate_app;
