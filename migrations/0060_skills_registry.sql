-- Skills registry: package sources/revisions/files (the shared package ingest's tables, 0050), versions bound to
-- revisions, compiled artifacts (L0 card, L1 instructions, L2 manifest) and quality runs (spec/001 migrations
-- 000017-000019, prior-art §3).

SELECT create_package_tables('skill_sources', 'skill_source_revisions', 'skill_revision_files');

-- A version ingested from a package names its source and revision (both or neither); deleting a source removes
-- its revisions and their versions, which the NO ACTION audit foreign keys below refuse while a version-bound log
-- or a quality run references one of them (audit targets stay append-only).
ALTER TABLE skill_versions
    ADD CONSTRAINT skill_versions_source_fkey FOREIGN KEY (source_id, account_id)
        REFERENCES skill_sources (id, account_id) ON DELETE CASCADE,
    ADD CONSTRAINT skill_versions_revision_fkey FOREIGN KEY (source_revision_id, source_id, account_id)
        REFERENCES skill_source_revisions (id, source_id, account_id) ON DELETE CASCADE,
    ADD CONSTRAINT skill_versions_source_pair_check CHECK ((source_id IS NULL) = (source_revision_id IS NULL));
-- One version per revision: replaying a package hash replays its version.
CREATE UNIQUE INDEX skill_versions_revision_key ON skill_versions (account_id, source_revision_id)
    WHERE source_revision_id IS NOT NULL;
CREATE INDEX skill_versions_source_idx ON skill_versions (account_id, source_id) WHERE source_id IS NOT NULL;

-- The compiled artifact of a version: derived data (recompiled on demand), so it goes with its version.
CREATE TABLE skill_compiled_artifacts (
    skill_version_id uuid PRIMARY KEY,
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    compiler_name text NOT NULL,
    compiler_version text NOT NULL,
    input_package_hash text NOT NULL,
    artifact_hash text NOT NULL,
    card jsonb NOT NULL,
    instructions text NOT NULL,
    frontmatter jsonb NOT NULL,
    resource_manifest jsonb NOT NULL,
    knowledge_contract jsonb,
    knowledge_contract_identity text NOT NULL,
    compiled_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT skill_compiled_artifacts_version_fkey FOREIGN KEY (skill_version_id, account_id)
        REFERENCES skill_versions (id, account_id) ON DELETE CASCADE,
    CONSTRAINT skill_compiled_artifacts_hash_check CHECK (input_package_hash ~ '^[0-9a-f]{64}$'
        AND artifact_hash ~ '^[0-9a-f]{64}$'),
    CONSTRAINT skill_compiled_artifacts_card_check CHECK (jsonb_typeof(card) = 'object'
        AND octet_length(card::text) <= 65536),
    CONSTRAINT skill_compiled_artifacts_manifest_check CHECK (jsonb_typeof(resource_manifest) = 'array'),
    CONSTRAINT skill_compiled_artifacts_contract_check CHECK (knowledge_contract IS NULL
        OR jsonb_typeof(knowledge_contract) = 'object')
);
SELECT enable_tenant_rls('skill_compiled_artifacts');

-- The last compile failure of a version (so the catalog can say why it shows a basic card).
CREATE TABLE skill_compile_failures (
    skill_version_id uuid PRIMARY KEY,
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    compiler_version text NOT NULL,
    problems jsonb NOT NULL,
    failed_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT skill_compile_failures_version_fkey FOREIGN KEY (skill_version_id, account_id)
        REFERENCES skill_versions (id, account_id) ON DELETE CASCADE,
    CONSTRAINT skill_compile_failures_problems_check CHECK (jsonb_typeof(problems) = 'array')
);
SELECT enable_tenant_rls('skill_compile_failures');

-- Quality runs are audit rows: append-only, and their target version cannot be deleted (NO ACTION); deleting a
-- baseline version only clears baseline_version_id; account deletion cascades.
CREATE TABLE skill_quality_runs (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid,
    key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
    skill_version_id uuid NOT NULL,
    baseline_version_id uuid,
    skill_name text NOT NULL,
    engine_version text NOT NULL,
    checkset_version text NOT NULL,
    input_package_hash text,
    baseline_package_hash text,
    telemetry_cutoff timestamptz NOT NULL,
    status text NOT NULL,
    summary jsonb NOT NULL,
    report jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT skill_quality_runs_id_account_key UNIQUE (id, account_id),
    CONSTRAINT skill_quality_runs_version_fkey FOREIGN KEY (skill_version_id, account_id)
        REFERENCES skill_versions (id, account_id),
    CONSTRAINT skill_quality_runs_baseline_fkey FOREIGN KEY (baseline_version_id, account_id)
        REFERENCES skill_versions (id, account_id) ON DELETE SET NULL (baseline_version_id),
    CONSTRAINT skill_quality_runs_status_check CHECK (status IN ('completed', 'failed')),
    CONSTRAINT skill_quality_runs_report_check CHECK (jsonb_typeof(report) = 'object'
        AND octet_length(report::text) <= 1048576),
    CONSTRAINT skill_quality_runs_summary_check CHECK (jsonb_typeof(summary) = 'object')
);
CREATE INDEX skill_quality_runs_version_idx ON skill_quality_runs (account_id, skill_version_id, created_at DESC, id);
SELECT enable_tenant_rls('skill_quality_runs');

-- Append-only for the application: it may insert and read runs, never rewrite one (the baseline foreign key's
-- SET NULL runs with the table owner's rights).
REVOKE UPDATE ON skill_quality_runs FROM agentmate_app;
