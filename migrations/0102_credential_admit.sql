-- The credential check and the rate check in one statement (issue 26 §5, issue 25's leftover): a REST request
-- cost two round trips before its tenant transaction, the credential lookup (0032, 0090) and limits_admit
-- (0097); it now costs one. Each function below finds the credential exactly as before (it calls the lookup
-- itself, so every reason to refuse stays in one place) and, only when the credential is accepted, stamps its
-- last_used_at if stale (0031; no separate round trip any more) and admits the request with limits_admit: a
-- refused credential is neither counted against the rate nor given a lease, as a request never authenticated
-- was not. The admission columns are limits_admit's (0, 0, NULL, NULL when not admitted or no limit is on:
-- p_per_minute <= 0 and p_slots <= 0). No row: no such credential. PL/pgSQL, so the plan is kept per session.

-- The admission of an accepted credential's request (p_accepted), as limits_admit answers it; (0, 0, NULL, NULL)
-- when the credential was refused or no limit is on. Called only by the functions below.
CREATE FUNCTION auth_admit(p_accepted boolean, p_account uuid, p_per_minute integer, p_burst integer,
                           p_slots integer, p_lease_s integer)
    RETURNS TABLE (retry_after integer, wait_ms integer, refused_by text, lease_id uuid)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    IF p_accepted AND (p_per_minute > 0 OR p_slots > 0) THEN
        RETURN QUERY SELECT * FROM limits_admit(p_account, p_per_minute, p_burst, p_slots, p_lease_s);
    ELSE
        RETURN QUERY SELECT 0, 0, NULL::text, NULL::uuid;
    END IF;
END
$$;

CREATE FUNCTION auth_api_key_admit(p_key_hash text, p_per_minute integer, p_burst integer, p_slots integer,
                                   p_lease_s integer)
    RETURNS TABLE (key_id uuid, account_id uuid, user_id uuid, scopes text[], role text, expired boolean,
                   stale boolean, suspended boolean, retry_after integer, wait_ms integer, refused_by text,
                   lease_id uuid)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    k record;
    v_ok boolean;
BEGIN
    SELECT * INTO k FROM auth_api_key(p_key_hash);
    IF NOT FOUND THEN
        RETURN;
    END IF;
    v_ok := NOT (k.expired OR k.suspended);
    IF v_ok AND k.stale THEN
        PERFORM auth_touch_api_key(k.key_id);
    END IF;
    RETURN QUERY SELECT k.key_id, k.account_id, k.user_id, k.scopes, k.role, k.expired, k.stale, k.suspended, a.*
        FROM auth_admit(v_ok, k.account_id, p_per_minute, p_burst, p_slots, p_lease_s) a;
END
$$;

-- A JWT is verified by the caller (signature, expiry, claims); p_epoch is its credentials epoch, which must
-- still be the user's.
CREATE FUNCTION auth_jwt_user_admit(p_user_id uuid, p_account_id uuid, p_epoch integer, p_per_minute integer,
                                    p_burst integer, p_slots integer, p_lease_s integer)
    RETURNS TABLE (role text, credentials_epoch integer, suspended boolean, retry_after integer, wait_ms integer,
                   refused_by text, lease_id uuid)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    u record;
BEGIN
    SELECT * INTO u FROM auth_jwt_user(p_user_id, p_account_id);
    IF NOT FOUND THEN
        RETURN;
    END IF;
    RETURN QUERY SELECT u.role, u.credentials_epoch, u.suspended, a.*
        FROM auth_admit(u.credentials_epoch = p_epoch AND NOT u.suspended, p_account_id, p_per_minute, p_burst,
                        p_slots, p_lease_s) a;
END
$$;

-- An OAuth access token, accepted only at p_resource (canonical; NULL: no access token is accepted here) when
-- its grant's resource covers it (auth/audience.py covers(): equal, or a path below it).
CREATE FUNCTION auth_oauth_token_admit(p_token_hash text, p_resource text, p_per_minute integer, p_burst integer,
                                       p_slots integer, p_lease_s integer)
    RETURNS TABLE (kind text, grant_id uuid, account_id uuid, user_id uuid, client_id text, scopes text[],
                   resource text, role text, expires_at timestamptz, expired boolean, used boolean,
                   revoked boolean, epoch_moved boolean, suspended boolean, stale boolean, retry_after integer,
                   wait_ms integer, refused_by text, lease_id uuid)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    t record;
    v_ok boolean;
BEGIN
    SELECT * INTO t FROM auth_oauth_token(p_token_hash);
    IF NOT FOUND THEN
        RETURN;
    END IF;
    v_ok := t.kind = 'access' AND NOT (t.suspended OR t.revoked OR t.epoch_moved OR t.expired)
        AND p_resource IS NOT NULL AND (p_resource = t.resource OR starts_with(p_resource, t.resource || '/'));
    IF v_ok AND t.stale THEN
        PERFORM auth_oauth_touch_grant(t.grant_id);
    END IF;
    RETURN QUERY SELECT t.kind, t.grant_id, t.account_id, t.user_id, t.client_id, t.scopes, t.resource, t.role,
        t.expires_at, t.expired, t.used, t.revoked, t.epoch_moved, t.suspended, t.stale, a.*
        FROM auth_admit(v_ok, t.account_id, p_per_minute, p_burst, p_slots, p_lease_s) a;
END
$$;

REVOKE EXECUTE ON FUNCTION auth_admit(boolean, uuid, integer, integer, integer, integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION auth_api_key_admit(text, integer, integer, integer, integer),
    auth_jwt_user_admit(uuid, uuid, integer, integer, integer, integer, integer),
    auth_oauth_token_admit(text, text, integer, integer, integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION auth_api_key_admit(text, integer, integer, integer, integer),
    auth_jwt_user_admit(uuid, uuid, integer, integer, integer, integer, integer),
    auth_oauth_token_admit(text, text, integer, integer, integer, integer) TO agentmate_app;
