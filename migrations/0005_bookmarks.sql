-- Bookmarks: saved http(s) URLs with an optional summary and saved page content. read_at is set exactly
-- while is_read is true (bookmarks_read_at_check).
CREATE TABLE bookmarks (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid,
    key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
    url text NOT NULL,
    title text NOT NULL DEFAULT '',
    summary text NOT NULL DEFAULT '',
    content text NOT NULL DEFAULT '',
    tags text[] NOT NULL DEFAULT '{}',
    source text,
    is_read boolean NOT NULL DEFAULT false,
    read_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT bookmarks_id_account_key UNIQUE (id, account_id),
    CONSTRAINT bookmarks_url_check CHECK (char_length(url) BETWEEN 1 AND 2048 AND url ~* '^https?://'),
    CONSTRAINT bookmarks_title_check CHECK (char_length(title) <= 500),
    CONSTRAINT bookmarks_summary_check CHECK (char_length(summary) <= 20000),
    CONSTRAINT bookmarks_source_check CHECK (char_length(source) BETWEEN 1 AND 255),
    CONSTRAINT bookmarks_content_size_check CHECK (octet_length(content) <= 1048576),
    CONSTRAINT bookmarks_read_at_check CHECK ((read_at IS NOT NULL) = is_read)
);
CREATE INDEX bookmarks_account_created_idx ON bookmarks (account_id, created_at DESC);
CREATE INDEX bookmarks_tags_idx ON bookmarks USING gin (tags);
SELECT enable_tenant_rls('bookmarks');
