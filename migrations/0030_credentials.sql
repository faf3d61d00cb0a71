-- Credentials checked against the database on every request (issue 8): a JWT carries its user's credentials
-- epoch, API keys may expire and record when they were last used.

-- A counter, not a timestamp: a token minted in the same second as a sign-out is still judged correctly.
-- Changing the password and signing out everywhere increment it; every JWT minted before is then refused.
ALTER TABLE users ADD COLUMN credentials_epoch integer NOT NULL DEFAULT 0;

ALTER TABLE api_keys
    ADD COLUMN expires_at timestamptz,
    ADD COLUMN last_used_at timestamptz;

-- The JWT check: the token's user exists, belongs to the token's account, and that account exists. The caller
-- compares the returned epoch with the token's claim. One statement, like the API-key lookup.
CREATE FUNCTION auth_jwt_user(p_user_id uuid, p_account_id uuid)
    RETURNS TABLE (role text, credentials_epoch integer)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
    SELECT u.role, u.credentials_epoch
    FROM users u JOIN accounts a ON a.id = u.account_id
    WHERE u.id = p_user_id AND u.account_id = p_account_id
$$;

-- The login lookup also returns the epoch the new token must carry.
DROP FUNCTION auth_user_by_email(text);
CREATE FUNCTION auth_user_by_email(p_email text)
    RETURNS TABLE (user_id uuid, account_id uuid, password_hash text, role text, credentials_epoch integer)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$ SELECT id, account_id, password_hash, role, credentials_epoch FROM users WHERE email = lower(p_email) $$;

-- The API-key check, still one statement: it reports expiry and stamps last_used_at at most once a minute per
-- key. The conditional UPDATE matches no row while the stamp is fresh, so the usual request writes nothing;
-- its condition is on the row itself, so concurrent requests do not stamp the same minute twice.
DROP FUNCTION auth_api_key(text);
CREATE FUNCTION auth_api_key(p_key_hash text)
    RETURNS TABLE (key_id uuid, account_id uuid, user_id uuid, scopes text[], role text, expired boolean)
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
    WITH found AS (
        SELECT k.id, k.account_id, k.user_id, k.scopes, u.role,
               coalesce(k.expires_at <= now(), false) AS expired
        FROM api_keys k JOIN users u ON u.id = k.user_id AND u.account_id = k.account_id
        WHERE k.key_hash = p_key_hash
    ), touched AS (
        UPDATE api_keys k SET last_used_at = now()
        FROM found f
        WHERE k.id = f.id AND NOT f.expired
          AND (k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute')
        RETURNING k.id
    )
    SELECT id, account_id, user_id, scopes, role, expired FROM found
$$;

REVOKE EXECUTE ON FUNCTION auth_jwt_user(uuid, uuid), auth_user_by_email(text), auth_api_key(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION auth_jwt_user(uuid, uuid), auth_user_by_email(text), auth_api_key(text) TO agentmate_app;

-- Login and registration throttling. NOT tenant rows: a bucket is keyed by the client address (and, for
-- logins, the email) before anyone is authenticated, so there is no account to scope it to and no RLS on it.
-- Buckets are hashes (no email or address is stored in clear); the application role reads and writes them.
CREATE TABLE auth_throttle (
    bucket text PRIMARY KEY,
    window_start timestamptz NOT NULL DEFAULT now(),
    failures integer NOT NULL DEFAULT 0,
    blocked_until timestamptz
);
CREATE INDEX auth_throttle_window_idx ON auth_throttle (window_start);
GRANT SELECT, INSERT, UPDATE, DELETE ON auth_throttle TO agentmate_app;

-- Count one failure (or, for registration, one attempt) in a bucket. A bucket's window opens at its first
-- failure; from the p_limit-th failure in the window the bucket is blocked for p_base_s seconds, doubling with
-- each further failure (capped at p_max_s). A failure after the window has passed starts a new window.
-- Returns the bucket's blocked_until (NULL when not blocked).
CREATE FUNCTION auth_throttle_hit(p_bucket text, p_limit integer, p_window_s integer, p_base_s integer,
                                  p_max_s integer)
    RETURNS timestamptz
    LANGUAGE sql VOLATILE SET search_path = public, pg_temp
AS $$
    INSERT INTO auth_throttle AS t (bucket, window_start, failures, blocked_until)
    VALUES (p_bucket, now(), 1, CASE WHEN p_limit <= 1 THEN now() + make_interval(secs => p_base_s) END)
    ON CONFLICT (bucket) DO UPDATE SET
        window_start = CASE WHEN t.window_start <= now() - make_interval(secs => p_window_s)
                            THEN now() ELSE t.window_start END,
        failures = CASE WHEN t.window_start <= now() - make_interval(secs => p_window_s)
                        THEN 1 ELSE t.failures + 1 END,
        blocked_until = CASE
            WHEN t.window_start <= now() - make_interval(secs => p_window_s)
                THEN CASE WHEN p_limit <= 1 THEN now() + make_interval(secs => p_base_s) END
            WHEN t.failures + 1 >= p_limit
                THEN now() + make_interval(secs => least(p_max_s::double precision,
                                                         p_base_s * 2 ^ least(t.failures + 1 - p_limit, 30)))
            END
    RETURNING blocked_until
$$;
GRANT EXECUTE ON FUNCTION auth_throttle_hit(text, integer, integer, integer, integer) TO agentmate_app;
