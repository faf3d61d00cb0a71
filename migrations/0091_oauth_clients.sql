-- OAuth clients registered dynamically (RFC 7591, issue 24). NOT tenant rows: a client is global — it registers
-- before any user has signed in, and one client (say, a desktop MCP host) may be authorised by users of many
-- accounts; what a client may do in an account lives in that account's grants (oauth_grants, with RLS). So there
-- is no account_id and no row-level security here; the application role reads and inserts rows directly.
-- Clients identified by a metadata document (an https client_id) are never stored: their document is fetched
-- and cached in process.
CREATE TABLE oauth_clients (
    client_id text CONSTRAINT oauth_clients_pkey PRIMARY KEY
        CONSTRAINT oauth_clients_client_id_check CHECK (client_id ~ '^ocl_[A-Za-z0-9_-]{16,64}$'),
    -- SHA-256 of the client secret (auth.tokens.hash_token); NULL for a public client (token_endpoint_auth_method
    -- "none"), which proves nothing at the token endpoint but its PKCE verifier.
    client_secret_hash text CONSTRAINT oauth_clients_client_secret_hash_check
        CHECK (client_secret_hash ~ '^[0-9a-f]{64}$'),
    -- The validated registration metadata as the SDK's OAuthClientInformationFull dumps it, without the client_id
    -- and the secret.
    metadata jsonb NOT NULL CONSTRAINT oauth_clients_metadata_check
        CHECK (jsonb_typeof(metadata) = 'object' AND pg_column_size(metadata) <= 65536),
    created_at timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT, INSERT ON oauth_clients TO agentmate_app;
