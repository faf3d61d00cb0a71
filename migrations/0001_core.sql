-- Core tenancy: accounts, users, API keys, idempotency records, and the row-level security helpers.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'agentmate_app') THEN
        CREATE ROLE agentmate_app LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
END
$$;

GRANT USAGE ON SCHEMA public TO agentmate_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO agentmate_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO agentmate_app;

-- The account of the current transaction, set by the application with set_config('app.account_id', …, true).
-- NULL when unset, so every policy below hides all rows from a transaction that forgot to set it.
CREATE FUNCTION app_account_id() RETURNS uuid
    LANGUAGE sql STABLE
AS $$ SELECT nullif(current_setting('app.account_id', true), '')::uuid $$;

-- Turn on row-level security for a tenant table (one policy for every command).
CREATE FUNCTION enable_tenant_rls(tbl regclass) RETURNS void
    LANGUAGE plpgsql
AS $$
BEGIN
    EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', tbl);
    EXECUTE format(
        'CREATE POLICY tenant_isolation ON %s USING (account_id = app_account_id()) WITH CHECK (account_id = app_account_id())',
        tbl);
END
$$;

CREATE TABLE accounts (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    created_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE accounts ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON accounts USING (id = app_account_id()) WITH CHECK (id = app_account_id());

CREATE TABLE users (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email text NOT NULL,
    password_hash text NOT NULL,
    role text NOT NULL DEFAULT 'user',
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT users_role_check CHECK (role IN ('user', 'admin')),
    CONSTRAINT users_email_lower_check CHECK (email = lower(email)),
    CONSTRAINT users_id_account_key UNIQUE (id, account_id)
);
CREATE UNIQUE INDEX users_email_key ON users (email);
SELECT enable_tenant_rls('users');

CREATE TABLE api_keys (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid NOT NULL,
    name text NOT NULL,
    key_hash text NOT NULL,
    prefix text NOT NULL,
    scopes text[] NOT NULL DEFAULT '{}',
    created_by_key_id uuid,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash),
    CONSTRAINT api_keys_id_account_key UNIQUE (id, account_id),
    CONSTRAINT api_keys_user_fkey FOREIGN KEY (user_id, account_id) REFERENCES users (id, account_id) ON DELETE CASCADE,
    CONSTRAINT api_keys_name_check CHECK (char_length(name) BETWEEN 1 AND 200)
);
CREATE INDEX api_keys_account_idx ON api_keys (account_id, created_at DESC);
SELECT enable_tenant_rls('api_keys');

-- Stored responses of creates sent with an Idempotency-Key header.
CREATE TABLE idempotency_keys (
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    route text NOT NULL,
    key text NOT NULL,
    request_hash text NOT NULL,
    status_code integer,
    response jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, route, key)
);
SELECT enable_tenant_rls('idempotency_keys');

-- Pre-authentication lookups. They run as the owner (SECURITY DEFINER) because no account is known yet;
-- each returns only the one row its argument identifies.
CREATE FUNCTION auth_register(p_email text, p_password_hash text)
    RETURNS TABLE (user_id uuid, account_id uuid)
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    v_id uuid := gen_random_uuid();
BEGIN
    INSERT INTO accounts (id) VALUES (v_id);
    INSERT INTO users (id, account_id, email, password_hash) VALUES (v_id, v_id, lower(p_email), p_password_hash);
    RETURN QUERY SELECT v_id, v_id;
END
$$;

CREATE FUNCTION auth_user_by_email(p_email text)
    RETURNS TABLE (user_id uuid, account_id uuid, password_hash text, role text)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$ SELECT id, account_id, password_hash, role FROM users WHERE email = lower(p_email) $$;

CREATE FUNCTION auth_api_key(p_key_hash text)
    RETURNS TABLE (key_id uuid, account_id uuid, user_id uuid, scopes text[], role text)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
    SELECT k.id, k.account_id, k.user_id, k.scopes, u.role
    FROM api_keys k JOIN users u ON u.id = k.user_id
    WHERE k.key_hash = p_key_hash
$$;

REVOKE EXECUTE ON FUNCTION auth_register(text, text), auth_user_by_email(text), auth_api_key(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION auth_register(text, text), auth_user_by_email(text), auth_api_key(text) TO agentmate_app;
GRANT EXECUTE ON FUNCTION app_account_id() TO agentmate_app;
