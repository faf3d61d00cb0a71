-- The device authorization grant (RFC 8628, issue 24): a headless client asks for a device code and a short user
-- code, a signed-in user approves the user code on the verification page, and the client polls the token endpoint
-- with the device code until the grant is issued.
--
-- NOT a tenant row until approved: a pending code belongs to no account (nobody has approved it yet), and it is
-- found by the device code's hash (the polling client) or by the user code (the verification page) before any
-- tenant is known. Every read and write therefore goes through the SECURITY DEFINER functions below, as the
-- credential lookups do. Once a user approves, the row carries that user's account_id, and row-level security
-- shows it only inside that account's tenant transactions (a pending row, account_id NULL, is visible to none).
-- The device code is stored hashed (auth.tokens); the user code is kept in clear: it is short-lived, the user
-- reads it off the device, and it is useless without the device code the client keeps.
CREATE TABLE oauth_device_codes (
    device_code_hash text PRIMARY KEY,
    user_code text NOT NULL,
    client_id text NOT NULL,
    client_name text,
    client_uri text,
    scopes text[] NOT NULL,              -- what the client asked for (defaulted and checked against the resource)
    resource text NOT NULL,              -- RFC 8707: the resource the tokens will be bound to
    expires_at timestamptz NOT NULL,
    interval_s integer NOT NULL,         -- the polling interval; grows by 5 s with each slow_down (§3.5)
    last_polled_at timestamptz,
    status text NOT NULL DEFAULT 'pending',
    account_id uuid,                     -- set at approval, with the approving user and the scopes granted
    user_id uuid,
    granted_scopes text[],
    decided_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT oauth_device_codes_status_check CHECK (status IN ('pending', 'approved', 'denied', 'consumed')),
    CONSTRAINT oauth_device_codes_scopes_check CHECK (cardinality(scopes) > 0),
    CONSTRAINT oauth_device_codes_interval_check CHECK (interval_s > 0),
    CONSTRAINT oauth_device_codes_approval_check CHECK (
        (status IN ('approved', 'consumed')) = (account_id IS NOT NULL AND user_id IS NOT NULL
                                                AND cardinality(granted_scopes) > 0)),
    CONSTRAINT oauth_device_codes_account_fkey FOREIGN KEY (account_id) REFERENCES accounts (id) ON DELETE CASCADE,
    CONSTRAINT oauth_device_codes_user_fkey FOREIGN KEY (user_id, account_id)
        REFERENCES users (id, account_id) ON DELETE CASCADE
);
-- A user code names one live request: unique among pending codes (an expired pending code is deleted when a new
-- request draws the same user code, which 20^8 codes make rare).
CREATE UNIQUE INDEX oauth_device_codes_user_code_key ON oauth_device_codes (user_code) WHERE status = 'pending';
CREATE INDEX oauth_device_codes_expires_idx ON oauth_device_codes (expires_at);
CREATE INDEX oauth_device_codes_user_idx ON oauth_device_codes (user_id, account_id);
SELECT enable_tenant_rls('oauth_device_codes');

-- A new request (§3.1). Returns false when the user code is taken by a live pending request (the caller draws
-- another). Also deletes requests that expired more than a day ago, so the table stays small.
CREATE FUNCTION oauth_device_start(p_device_code_hash text, p_user_code text, p_client_id text,
                                   p_client_name text, p_client_uri text, p_scopes text[], p_resource text,
                                   p_ttl_s integer, p_interval_s integer)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    DELETE FROM oauth_device_codes
    WHERE expires_at < now() - interval '1 day'
       OR (user_code = p_user_code AND status = 'pending' AND expires_at <= now());
    INSERT INTO oauth_device_codes (device_code_hash, user_code, client_id, client_name, client_uri, scopes,
                                    resource, expires_at, interval_s)
    VALUES (p_device_code_hash, p_user_code, p_client_id, p_client_name, p_client_uri, p_scopes, p_resource,
            now() + make_interval(secs => p_ttl_s), p_interval_s)
    ON CONFLICT (user_code) WHERE status = 'pending' DO NOTHING;
    RETURN FOUND;
END
$$;

-- The verification page's lookup: a pending, unexpired request by its user code (no row otherwise).
CREATE FUNCTION oauth_device_pending(p_user_code text)
    RETURNS TABLE (client_id text, client_name text, client_uri text, scopes text[], resource text,
                   expires_at timestamptz)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
    SELECT client_id, client_name, client_uri, scopes, resource, expires_at FROM oauth_device_codes
    WHERE user_code = p_user_code AND status = 'pending' AND expires_at > now()
$$;

-- The user's decision on a pending, unexpired request: approve (with the scopes granted, never more than asked)
-- or deny (p_account_id, p_user_id and p_scopes NULL). Returns false when no such request is pending any more.
CREATE FUNCTION oauth_device_decide(p_user_code text, p_approve boolean, p_account_id uuid, p_user_id uuid,
                                    p_scopes text[])
    RETURNS boolean
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
    WITH decided AS (
        UPDATE oauth_device_codes
        SET status = CASE WHEN p_approve THEN 'approved' ELSE 'denied' END,
            account_id = CASE WHEN p_approve THEN p_account_id END,
            user_id = CASE WHEN p_approve THEN p_user_id END,
            granted_scopes = CASE WHEN p_approve THEN p_scopes END,
            decided_at = now()
        WHERE user_code = p_user_code AND status = 'pending' AND expires_at > now()
          AND (NOT p_approve OR p_scopes <@ scopes)
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM decided)
$$;

-- One poll of the token endpoint (§3.4, §3.5), decided under the row's lock so that two polls of an approved
-- code issue one grant. outcome: 'invalid_grant' (unknown, another client's, or already consumed),
-- 'expired_token', 'slow_down' (polled within the interval: the interval grows by p_slow_down_s),
-- 'authorization_pending', 'access_denied', or 'approved' (now consumed; the grant's fields are returned).
CREATE FUNCTION oauth_device_poll(p_device_code_hash text, p_client_id text, p_slow_down_s integer)
    RETURNS TABLE (outcome text, account_id uuid, user_id uuid, client_name text, client_uri text,
                   scopes text[], resource text, interval_s integer)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    r oauth_device_codes;
BEGIN
    SELECT * INTO r FROM oauth_device_codes d WHERE d.device_code_hash = p_device_code_hash FOR UPDATE;
    IF NOT FOUND OR r.client_id <> p_client_id OR r.status = 'consumed' THEN
        outcome := 'invalid_grant';
    ELSIF r.expires_at <= now() THEN
        outcome := 'expired_token';
    ELSIF r.status = 'pending' AND r.last_polled_at > now() - make_interval(secs => r.interval_s) THEN
        outcome := 'slow_down';
        interval_s := r.interval_s + p_slow_down_s;
        UPDATE oauth_device_codes d SET interval_s = r.interval_s + p_slow_down_s, last_polled_at = now()
        WHERE d.device_code_hash = p_device_code_hash;
    ELSIF r.status = 'pending' THEN
        outcome := 'authorization_pending';
        interval_s := r.interval_s;
        UPDATE oauth_device_codes d SET last_polled_at = now() WHERE d.device_code_hash = p_device_code_hash;
    ELSIF r.status = 'denied' THEN
        outcome := 'access_denied';
    ELSE
        outcome := 'approved';
        account_id := r.account_id;
        user_id := r.user_id;
        client_name := r.client_name;
        client_uri := r.client_uri;
        scopes := r.granted_scopes;
        resource := r.resource;
        interval_s := r.interval_s;
        UPDATE oauth_device_codes d SET status = 'consumed', last_polled_at = now()
        WHERE d.device_code_hash = p_device_code_hash;
    END IF;
    RETURN NEXT;
END
$$;

REVOKE EXECUTE ON FUNCTION oauth_device_start(text, text, text, text, text, text[], text, integer, integer),
    oauth_device_pending(text), oauth_device_decide(text, boolean, uuid, uuid, text[]),
    oauth_device_poll(text, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION oauth_device_start(text, text, text, text, text, text[], text, integer, integer),
    oauth_device_pending(text), oauth_device_decide(text, boolean, uuid, uuid, text[]),
    oauth_device_poll(text, text, integer) TO agentmate_app;
