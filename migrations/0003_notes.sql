-- Notes: titled text with tags. Content is capped at 1 MiB of UTF-8 (appends included).
CREATE TABLE notes (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid,
    key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
    title text NOT NULL,
    content text NOT NULL DEFAULT '',
    tags text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT notes_id_account_key UNIQUE (id, account_id),
    CONSTRAINT notes_title_check CHECK (char_length(title) BETWEEN 1 AND 500),
    CONSTRAINT notes_content_size_check CHECK (octet_length(content) <= 1048576)
);
CREATE INDEX notes_account_created_idx ON notes (account_id, created_at DESC);
CREATE INDEX notes_tags_idx ON notes USING gin (tags);
SELECT enable_tenant_rls('notes');
