-- Working memory: raw per-session items (messages, tool results, drafts) replayed in server-assigned seq order.
-- Never indexed for search and never expired: rows live until explicitly deleted.

CREATE TABLE working_sessions (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    title text,
    agent text,
    status text NOT NULL DEFAULT 'active',
    metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
    -- Highest seq ever assigned in this session (0 = none). Appends lock the row FOR UPDATE and advance it;
    -- deleting items never lowers it, so a seq is never reused.
    last_seq bigint NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT working_sessions_id_account_key UNIQUE (id, account_id),
    CONSTRAINT working_sessions_status_check CHECK (status IN ('active', 'archived')),
    CONSTRAINT working_sessions_title_check CHECK (title IS NULL OR char_length(title) BETWEEN 1 AND 500),
    CONSTRAINT working_sessions_agent_check CHECK (agent IS NULL OR char_length(agent) BETWEEN 1 AND 200),
    CONSTRAINT working_sessions_metadata_check CHECK (jsonb_typeof(metadata) = 'object'),
    CONSTRAINT working_sessions_last_seq_check CHECK (last_seq >= 0)
);
CREATE INDEX working_sessions_account_updated_idx ON working_sessions (account_id, updated_at DESC, id);
CREATE INDEX working_sessions_account_agent_idx ON working_sessions (account_id, agent, updated_at DESC)
    WHERE agent IS NOT NULL;
SELECT enable_tenant_rls('working_sessions');

CREATE TABLE working_items (
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    session_id uuid NOT NULL,
    seq bigint NOT NULL,
    item_type text NOT NULL,
    role text,
    content text NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
    idempotency_key text NOT NULL,
    -- sha256 hex of the canonical JSON of {item_type, role, content, metadata}: a retry under the same key
    -- must carry the same hash or it is a conflict.
    content_hash text NOT NULL,
    -- UTF-8 bytes of content plus serialized metadata; lets replay pages stay under a byte budget without
    -- detoasting content.
    size_bytes integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT working_items_pkey PRIMARY KEY (account_id, session_id, seq),
    CONSTRAINT working_items_idempotency_key_key UNIQUE (account_id, session_id, idempotency_key),
    CONSTRAINT working_items_session_fkey FOREIGN KEY (session_id, account_id)
        REFERENCES working_sessions (id, account_id) ON DELETE CASCADE,
    CONSTRAINT working_items_seq_check CHECK (seq >= 1),
    CONSTRAINT working_items_item_type_check CHECK (item_type IN ('message', 'tool_result', 'draft')),
    CONSTRAINT working_items_role_check CHECK (role IS NULL OR role IN ('system', 'user', 'assistant', 'tool')),
    -- A message has a role; tool results and drafts have none.
    CONSTRAINT working_items_role_required_check CHECK ((item_type = 'message') = (role IS NOT NULL)),
    CONSTRAINT working_items_content_size_check CHECK (octet_length(content) <= 1048576),
    CONSTRAINT working_items_metadata_check CHECK (jsonb_typeof(metadata) = 'object'),
    CONSTRAINT working_items_idempotency_key_check CHECK (char_length(idempotency_key) BETWEEN 1 AND 512),
    CONSTRAINT working_items_content_hash_check CHECK (content_hash ~ '^[0-9a-f]{64}$'),
    CONSTRAINT working_items_size_bytes_check CHECK (size_bytes >= 0)
);
SELECT enable_tenant_rls('working_items');
