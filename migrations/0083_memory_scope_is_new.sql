-- Issue 10: a write that opens a new scope whose key differs from an existing one only in case, slashes or spaces
-- is warned. Whether the scope is new is asked in the inserting statement's RETURNING (a subquery there does not
-- see the row being inserted). A PL/pgSQL function, so that its two index probes are planned once per connection:
-- inlined into every insert (no server-side prepared statements behind RDS Proxy) they added planning time to
-- each append. SECURITY INVOKER: row-level security applies as to the caller's own queries.
CREATE FUNCTION memory_scope_is_new(p_account uuid, p_scope_type text, p_scope_key text)
RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF p_scope_key = '' THEN
        RETURN false;  -- global: one scope, nothing to confuse it with
    END IF;
    RETURN NOT EXISTS (SELECT 1 FROM memory_events
                       WHERE account_id = p_account AND scope_type = p_scope_type AND scope_key = p_scope_key)
       AND NOT EXISTS (SELECT 1 FROM memory_entries
                       WHERE account_id = p_account AND scope_type = p_scope_type AND scope_key = p_scope_key);
END;
$$;

REVOKE EXECUTE ON FUNCTION memory_scope_is_new(uuid, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memory_scope_is_new(uuid, text, text) TO agentmate_app;
