-- Reports: agent-written documents (Markdown or HTML), labelled by the agent/skill that wrote them and the
-- API key that created them. Tenant-only: no cross-account (public) reads exist.
CREATE TABLE reports (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid,
    source_key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
    title text NOT NULL,
    content text NOT NULL DEFAULT '',
    format text NOT NULL DEFAULT 'md',
    tags text[] NOT NULL DEFAULT '{}',
    source text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT reports_id_account_key UNIQUE (id, account_id),
    CONSTRAINT reports_title_check CHECK (char_length(title) BETWEEN 1 AND 500),
    CONSTRAINT reports_format_check CHECK (format IN ('md', 'html')),
    CONSTRAINT reports_source_check CHECK (char_length(source) BETWEEN 1 AND 255),
    CONSTRAINT reports_content_size_check CHECK (octet_length(content) <= 1048576)
);
CREATE INDEX reports_account_created_idx ON reports (account_id, created_at DESC);
CREATE INDEX reports_account_source_idx ON reports (account_id, source);
CREATE INDEX reports_tags_idx ON reports USING gin (tags);
SELECT enable_tenant_rls('reports');
