-- An operator can suspend an account (issue 8: "the account is active"). While accounts.suspended_at is set,
-- the account's JWTs and API keys are refused (401) over REST and MCP, and its users cannot log in; nothing of
-- the account is deleted, and reactivating it makes the same credentials work again.
ALTER TABLE accounts ADD COLUMN suspended_at timestamptz;

-- The per-request checks report the account's state from the join they already make: still one statement.
DROP FUNCTION auth_api_key(text);
CREATE FUNCTION auth_api_key(p_key_hash text)
    RETURNS TABLE (key_id uuid, account_id uuid, user_id uuid, scopes text[], role text, expired boolean,
                   stale boolean, suspended boolean)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    RETURN QUERY
    SELECT k.id, k.account_id, k.user_id, k.scopes, u.role,
           coalesce(k.expires_at <= now(), false),
           k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute',
           a.suspended_at IS NOT NULL
    FROM api_keys k
    JOIN users u ON u.id = k.user_id AND u.account_id = k.account_id
    JOIN accounts a ON a.id = k.account_id
    WHERE k.key_hash = p_key_hash;
END
$$;

DROP FUNCTION auth_jwt_user(uuid, uuid);
CREATE FUNCTION auth_jwt_user(p_user_id uuid, p_account_id uuid)
    RETURNS TABLE (role text, credentials_epoch integer, suspended boolean)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    RETURN QUERY
    SELECT u.role, u.credentials_epoch, a.suspended_at IS NOT NULL
    FROM users u JOIN accounts a ON a.id = u.account_id
    WHERE u.id = p_user_id AND u.account_id = p_account_id;
END
$$;

DROP FUNCTION auth_user_by_email(text);
CREATE FUNCTION auth_user_by_email(p_email text)
    RETURNS TABLE (user_id uuid, account_id uuid, password_hash text, role text, credentials_epoch integer,
                   suspended boolean)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
    SELECT u.id, u.account_id, u.password_hash, u.role, u.credentials_epoch, a.suspended_at IS NOT NULL
    FROM users u JOIN accounts a ON a.id = u.account_id
    WHERE u.email = lower(p_email)
$$;

-- Suspend (p_suspend) or reactivate another account, for an admin of the calling transaction's account
-- (admin_assert, migration 0010). Suspending keeps the first suspended_at. Returns no row for an unknown
-- account. An admin's own account is refused here too, so no request can lock every admin out.
CREATE FUNCTION admin_set_account_suspended(p_admin_user_id uuid, p_account_id uuid, p_suspend boolean)
    RETURNS TABLE (account_id uuid, suspended_at timestamptz)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
BEGIN
    PERFORM admin_assert(p_admin_user_id);
    IF p_suspend AND p_account_id = app_account_id() THEN
        RAISE EXCEPTION 'an admin cannot suspend its own account' USING ERRCODE = '42501';
    END IF;
    RETURN QUERY
    UPDATE accounts a
    SET suspended_at = CASE WHEN p_suspend THEN coalesce(a.suspended_at, now()) END
    WHERE a.id = p_account_id
    RETURNING a.id, a.suspended_at;
END
$$;

REVOKE EXECUTE ON FUNCTION auth_api_key(text), auth_jwt_user(uuid, uuid), auth_user_by_email(text),
    admin_set_account_suspended(uuid, uuid, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION auth_api_key(text), auth_jwt_user(uuid, uuid), auth_user_by_email(text),
    admin_set_account_suspended(uuid, uuid, boolean) TO agentmate_app;
