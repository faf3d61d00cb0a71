-- Skill execution records: published SKILL.md versions (one active per skill) and execution logs.
-- Room is left for the registry (sources, revisions, files, compiled catalogs): source_id,
-- source_revision_id and package_hash are nullable and carry no foreign key yet.

CREATE TABLE skill_versions (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid,
    key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
    source_id uuid,
    source_revision_id uuid,
    skill_name text NOT NULL,
    version text NOT NULL,
    content text NOT NULL,
    content_hash text NOT NULL,
    package_hash text,
    agent_id text NOT NULL DEFAULT '',
    change_summary text NOT NULL DEFAULT '',
    eval_pass_rate double precision,
    is_active boolean NOT NULL DEFAULT false,
    activated_at timestamptz,
    published_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT skill_versions_id_account_key UNIQUE (id, account_id),
    -- Lets skill_logs prove at the database level that a log's version belongs to the same skill.
    CONSTRAINT skill_versions_id_account_name_key UNIQUE (id, account_id, skill_name),
    CONSTRAINT skill_versions_skill_name_check CHECK (char_length(skill_name) BETWEEN 1 AND 200),
    CONSTRAINT skill_versions_version_check CHECK (char_length(version) BETWEEN 1 AND 100),
    CONSTRAINT skill_versions_content_hash_check CHECK (content_hash ~ '^[0-9a-f]{64}$'),
    CONSTRAINT skill_versions_package_hash_check CHECK (package_hash IS NULL OR package_hash ~ '^[0-9a-f]{64}$'),
    CONSTRAINT skill_versions_eval_pass_rate_check CHECK (eval_pass_rate IS NULL OR eval_pass_rate BETWEEN 0 AND 1)
);
CREATE UNIQUE INDEX skill_versions_one_active_key ON skill_versions (account_id, skill_name) WHERE is_active;
-- Direct publishes (no source): a version label names one body, and one body has one label.
CREATE UNIQUE INDEX skill_versions_direct_label_key ON skill_versions (account_id, skill_name, version)
    WHERE source_id IS NULL;
CREATE UNIQUE INDEX skill_versions_direct_content_key ON skill_versions (account_id, skill_name, content_hash)
    WHERE source_id IS NULL;
CREATE INDEX skill_versions_account_name_idx ON skill_versions (account_id, skill_name, published_at DESC);
SELECT enable_tenant_rls('skill_versions');

CREATE TABLE skill_logs (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid,
    key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
    skill_name text NOT NULL,
    skill_version text NOT NULL DEFAULT 'unknown',
    skill_version_id uuid,
    agent_id text NOT NULL DEFAULT '',
    session_id text NOT NULL DEFAULT '',
    trigger_text text NOT NULL DEFAULT '',
    was_triggered boolean NOT NULL DEFAULT true,
    outcome text NOT NULL,
    failure_reason text NOT NULL DEFAULT '',
    user_correction text NOT NULL DEFAULT '',
    tool_calls jsonb NOT NULL DEFAULT '[]'::jsonb,
    duration_ms integer,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT skill_logs_id_account_key UNIQUE (id, account_id),
    -- Version-bound logs are an audit trail: deleting their version is refused (NO ACTION).
    CONSTRAINT skill_logs_skill_version_fkey FOREIGN KEY (skill_version_id, account_id, skill_name)
        REFERENCES skill_versions (id, account_id, skill_name),
    CONSTRAINT skill_logs_skill_name_check CHECK (char_length(skill_name) BETWEEN 1 AND 200),
    CONSTRAINT skill_logs_outcome_check CHECK (outcome IN ('success', 'failure', 'partial', 'user_corrected')),
    CONSTRAINT skill_logs_duration_check CHECK (duration_ms IS NULL OR duration_ms >= 0),
    CONSTRAINT skill_logs_tool_calls_check CHECK (jsonb_typeof(tool_calls) = 'array')
);
CREATE INDEX skill_logs_account_created_idx ON skill_logs (account_id, created_at DESC);
CREATE INDEX skill_logs_skill_idx ON skill_logs (account_id, skill_name, created_at DESC);
CREATE INDEX skill_logs_session_idx ON skill_logs (account_id, session_id, created_at) WHERE session_id <> '';
CREATE INDEX skill_logs_skill_version_idx ON skill_logs (account_id, skill_version_id, created_at)
    WHERE skill_version_id IS NOT NULL;
SELECT enable_tenant_rls('skill_logs');

-- Attribution anchors of the memory journal (0012) now that skill_versions exists.
ALTER TABLE memory_events ADD CONSTRAINT memory_events_skill_version_fkey FOREIGN KEY (skill_version_id, account_id)
    REFERENCES skill_versions (id, account_id) ON DELETE SET NULL (skill_version_id);
ALTER TABLE memory_feedback ADD CONSTRAINT memory_feedback_skill_version_fkey FOREIGN KEY (skill_version_id, account_id)
    REFERENCES skill_versions (id, account_id) ON DELETE SET NULL (skill_version_id);
