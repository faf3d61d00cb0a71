-- The OAuth 2.1 authorization server (issue 24): pending authorization requests, authorization codes, grants
-- (one user's authorisation of one client: a token family) and their access and refresh tokens.
-- Tokens and codes are stored only as their SHA-256 (auth/tokens.py), as API keys are.

-- A pending authorization: /authorize stored it, the consent page shows it, approving it mints a code. Not a
-- tenant row: no user is known yet. The consent page reaches it by its random id only.
CREATE TABLE oauth_requests (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    client_id text NOT NULL,
    client_name text,
    client_uri text,
    redirect_uri text NOT NULL,
    code_challenge text NOT NULL,
    state text,
    scopes text[] NOT NULL,
    resource text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at timestamptz
);
CREATE INDEX oauth_requests_expires_idx ON oauth_requests (expires_at);
GRANT SELECT, INSERT, UPDATE, DELETE ON oauth_requests TO agentmate_app;

-- A grant: a user's authorisation of one client for one resource. Its tokens are refused once it is revoked,
-- once the user's credentials epoch moved on (password changed, signed out everywhere), and with the user.
CREATE TABLE oauth_grants (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid NOT NULL,
    client_id text NOT NULL,
    client_name text,
    client_uri text,
    scopes text[] NOT NULL,
    resource text NOT NULL,
    credentials_epoch integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at timestamptz,
    CONSTRAINT oauth_grants_id_account_key UNIQUE (id, account_id),
    CONSTRAINT oauth_grants_user_fkey FOREIGN KEY (user_id, account_id)
        REFERENCES users (id, account_id) ON DELETE CASCADE,
    CONSTRAINT oauth_grants_scopes_check CHECK (cardinality(scopes) > 0)
);
CREATE INDEX oauth_grants_account_idx ON oauth_grants (account_id, created_at DESC);
SELECT enable_tenant_rls('oauth_grants');

-- An authorization code: a tenant row (the consenting user's), which the token endpoint finds by hash before it
-- knows the tenant through auth_oauth_code (SECURITY DEFINER). grant_id is set at the exchange; a second exchange
-- of the same code revokes that grant (RFC 6749 §4.1.2).
CREATE TABLE oauth_codes (
    code_hash text PRIMARY KEY,
    request_id uuid NOT NULL,
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid NOT NULL,
    client_id text NOT NULL,
    client_name text,
    client_uri text,
    redirect_uri text NOT NULL,
    code_challenge text NOT NULL,
    scopes text[] NOT NULL,
    resource text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at timestamptz,
    grant_id uuid,
    CONSTRAINT oauth_codes_user_fkey FOREIGN KEY (user_id, account_id)
        REFERENCES users (id, account_id) ON DELETE CASCADE,
    CONSTRAINT oauth_codes_scopes_check CHECK (cardinality(scopes) > 0)
);
CREATE INDEX oauth_codes_expires_idx ON oauth_codes (expires_at);
SELECT enable_tenant_rls('oauth_codes');

-- Access and refresh tokens of a grant. A refresh token's used_at records its rotation: a second use is a replay
-- and revokes the whole grant.
CREATE TABLE oauth_tokens (
    token_hash text PRIMARY KEY,
    grant_id uuid NOT NULL,
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    kind text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at timestamptz,
    CONSTRAINT oauth_tokens_grant_fkey FOREIGN KEY (grant_id, account_id)
        REFERENCES oauth_grants (id, account_id) ON DELETE CASCADE,
    CONSTRAINT oauth_tokens_kind_check CHECK (kind IN ('access', 'refresh'))
);
CREATE INDEX oauth_tokens_grant_idx ON oauth_tokens (grant_id);
SELECT enable_tenant_rls('oauth_tokens');

-- The per-request check of an OAuth token (and the token endpoint's lookup of a refresh token, and revocation's
-- of either), before the tenant is known: one statement reports the token's grant and everything that refuses
-- it. PL/pgSQL keeps its plan for the pooled session (see 0031).
CREATE FUNCTION auth_oauth_token(p_token_hash text)
    RETURNS TABLE (kind text, grant_id uuid, account_id uuid, user_id uuid, client_id text, scopes text[],
                   resource text, role text, expires_at timestamptz, expired boolean, used boolean,
                   revoked boolean, epoch_moved boolean, suspended boolean, stale boolean)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    RETURN QUERY
    SELECT t.kind, g.id, g.account_id, g.user_id, g.client_id, g.scopes, g.resource, u.role, t.expires_at,
           t.expires_at <= now(),
           t.used_at IS NOT NULL,
           g.revoked_at IS NOT NULL,
           u.credentials_epoch <> g.credentials_epoch,
           a.suspended_at IS NOT NULL,
           g.last_used_at IS NULL OR g.last_used_at < now() - interval '1 minute'
    FROM oauth_tokens t
    JOIN oauth_grants g ON g.id = t.grant_id AND g.account_id = t.account_id
    JOIN users u ON u.id = g.user_id AND u.account_id = g.account_id
    JOIN accounts a ON a.id = g.account_id
    WHERE t.token_hash = p_token_hash;
END
$$;

-- The token endpoint's lookup of a code before the tenant is known (the exchange then locks it in the tenant's
-- transaction).
CREATE FUNCTION auth_oauth_code(p_code_hash text)
    RETURNS TABLE (code_hash text, account_id uuid, user_id uuid, client_id text, client_name text,
                   client_uri text, redirect_uri text, code_challenge text, scopes text[], resource text,
                   expires_at timestamptz, used boolean, grant_id uuid)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
    SELECT c.code_hash, c.account_id, c.user_id, c.client_id, c.client_name, c.client_uri, c.redirect_uri,
           c.code_challenge, c.scopes, c.resource, c.expires_at, c.used_at IS NOT NULL, c.grant_id
    FROM oauth_codes c WHERE c.code_hash = p_code_hash
$$;

-- Stamp a grant's last_used_at at most once a minute (the condition is on the row, as auth_touch_api_key's).
CREATE FUNCTION auth_oauth_touch_grant(p_grant_id uuid)
    RETURNS void
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
    UPDATE oauth_grants SET last_used_at = now()
    WHERE id = p_grant_id AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
$$;

REVOKE EXECUTE ON FUNCTION auth_oauth_token(text), auth_oauth_code(text), auth_oauth_touch_grant(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION auth_oauth_token(text), auth_oauth_code(text), auth_oauth_touch_grant(uuid)
    TO agentmate_app;
