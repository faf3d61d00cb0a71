CREATE TABLE todos (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid,
    key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
    title text NOT NULL,
    description text NOT NULL DEFAULT '',
    status text NOT NULL DEFAULT 'pending',
    priority text NOT NULL DEFAULT 'medium',
    due_date timestamptz,
    tags text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT todos_id_account_key UNIQUE (id, account_id),
    CONSTRAINT todos_status_check CHECK (status IN ('pending', 'in_progress', 'done', 'cancelled')),
    CONSTRAINT todos_priority_check CHECK (priority IN ('low', 'medium', 'high')),
    CONSTRAINT todos_title_check CHECK (char_length(title) BETWEEN 1 AND 500)
);
CREATE INDEX todos_account_created_idx ON todos (account_id, created_at DESC);
CREATE INDEX todos_tags_idx ON todos USING gin (tags);
SELECT enable_tenant_rls('todos');
