-- Wiki lint K3.7 (spec/001 "Knowledge", prior-art §3 migration 30, §4.8): one stored run per lint of a source's
-- active build, with its findings. A run records both the build and the revision it was compared with, because
-- staleness is a relation between the two: the same build linted before and after a sync yields different
-- findings. Runs and findings are observations, written once and never edited (no status on a finding: one that
-- matters is one that reappears on the next run).

CREATE TABLE knowledge_lint_runs (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid,
    key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
    source_id uuid NOT NULL,
    build_id uuid NOT NULL,
    revision_id uuid NOT NULL,
    pages_examined integer NOT NULL,
    documents_examined integer NOT NULL,
    findings_total integer NOT NULL,
    findings_warning integer NOT NULL,
    findings_info integer NOT NULL,
    started_at timestamptz NOT NULL,
    finished_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT knowledge_lint_runs_id_account_key UNIQUE (id, account_id),
    CONSTRAINT knowledge_lint_runs_source_fkey FOREIGN KEY (source_id, account_id)
        REFERENCES knowledge_sources (id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_lint_runs_build_fkey FOREIGN KEY (build_id, source_id, account_id)
        REFERENCES knowledge_builds (id, source_id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_lint_runs_revision_fkey FOREIGN KEY (revision_id, source_id, account_id)
        REFERENCES knowledge_source_revisions (id, source_id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_lint_runs_counts_check CHECK (pages_examined >= 0 AND documents_examined >= 0
        AND findings_warning >= 0 AND findings_info >= 0 AND findings_total = findings_warning + findings_info)
);
CREATE INDEX knowledge_lint_runs_source_idx ON knowledge_lint_runs (account_id, source_id, finished_at DESC, id);
CREATE INDEX knowledge_lint_runs_recent_idx ON knowledge_lint_runs (account_id, finished_at DESC, id);
SELECT enable_tenant_rls('knowledge_lint_runs');

CREATE TABLE knowledge_lint_findings (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    run_id uuid NOT NULL,
    ordinal integer NOT NULL,
    rule text NOT NULL,
    severity text NOT NULL,
    page_path text,
    related_path text,
    detail text NOT NULL,
    CONSTRAINT knowledge_lint_findings_run_fkey FOREIGN KEY (run_id, account_id)
        REFERENCES knowledge_lint_runs (id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_lint_findings_run_ordinal_key UNIQUE (run_id, ordinal),
    CONSTRAINT knowledge_lint_findings_rule_check CHECK (rule IN ('orphan_page', 'stale_citation', 'stale_cascade',
        'recorded_contradiction', 'unlabelled_supersede', 'entity_link_kind', 'uncovered_document')),
    CONSTRAINT knowledge_lint_findings_severity_check CHECK (severity IN ('warning', 'info'))
);
SELECT enable_tenant_rls('knowledge_lint_findings');

-- Observations are append-only for the application (an account deletion cascades with the owner's rights).
REVOKE UPDATE ON knowledge_lint_runs, knowledge_lint_findings FROM agentmate_app;
