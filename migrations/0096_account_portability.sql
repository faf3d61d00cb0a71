-- Account portability (issue 25 §4): an export of an account's data to an archive in object storage, and an
-- import of such an archive into an empty account. Each row is the caller's handle on one job (agentmate.jobs);
-- its status mirrors the job's (the kind's on_change), and the result (counts, the object's key) is written in
-- the job's success transaction. The archive itself never enters the database.
CREATE TABLE account_exports (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    status text NOT NULL DEFAULT 'queued',
    job_id uuid,
    object_key text NOT NULL,
    format_version integer,
    counts jsonb NOT NULL DEFAULT '{}'::jsonb,
    size_bytes bigint,
    error text,
    created_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    CONSTRAINT account_exports_id_account_key UNIQUE (id, account_id),
    CONSTRAINT account_exports_status_check
        CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    CONSTRAINT account_exports_counts_check CHECK (jsonb_typeof(counts) = 'object')
);
CREATE INDEX account_exports_account_created_idx ON account_exports (account_id, created_at DESC);
SELECT enable_tenant_rls('account_exports');

CREATE TABLE account_imports (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    -- awaiting_upload until started; then the job's status.
    status text NOT NULL DEFAULT 'awaiting_upload',
    job_id uuid,
    object_key text NOT NULL,
    format_version integer,
    counts jsonb NOT NULL DEFAULT '{}'::jsonb,
    error text,
    created_at timestamptz NOT NULL DEFAULT now(),
    started_at timestamptz,
    finished_at timestamptz,
    CONSTRAINT account_imports_id_account_key UNIQUE (id, account_id),
    CONSTRAINT account_imports_status_check
        CHECK (status IN ('awaiting_upload', 'queued', 'running', 'succeeded', 'failed', 'cancelled')),
    CONSTRAINT account_imports_counts_check CHECK (jsonb_typeof(counts) = 'object')
);
CREATE INDEX account_imports_account_created_idx ON account_imports (account_id, created_at DESC);
SELECT enable_tenant_rls('account_imports');
