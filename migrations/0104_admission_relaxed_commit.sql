-- The admission commits without waiting for the WAL (issue 26, session 14). Every request runs one admitting
-- statement before its tenant transaction (0102: the credential lookup, its stale last-use stamp and
-- limits_admit), and each one writes (the account's rate bucket at least): with synchronous_commit on, every
-- request paid a WAL flush for bookkeeping that no response acknowledges. A crash may now lose the last fraction
-- of a second of those writes: a few requests more let through, an expensive request's lease freed early, a
-- last-use stamp a minute old. The tenant transaction that follows on the same connection commits durably: the
-- setting is transaction-local, and the admitting statement is a transaction of its own (autocommit).

CREATE OR REPLACE FUNCTION limits_admit(p_account uuid, p_per_minute integer, p_burst integer, p_slots integer,
                             p_lease_s integer)
    RETURNS TABLE (retry_after integer, wait_ms integer, refused_by text, lease_id uuid)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    v_now timestamptz := clock_timestamp();
    v_step interval;
    v_tat timestamptz;
    v_held integer;
    v_lease uuid;
    v_wait double precision;
BEGIN
    IF p_per_minute > 0 THEN
        v_step := make_interval(secs => 60.0 / p_per_minute);
        SELECT r.tat INTO v_tat FROM account_rate r WHERE r.account_id = p_account;
        IF v_tat IS NOT NULL AND greatest(v_tat, v_now) + v_step - v_now > v_step * greatest(p_burst, 1) THEN
            v_wait := extract(epoch FROM greatest(v_tat, v_now) + v_step - v_now - v_step * greatest(p_burst, 1));
            RETURN QUERY SELECT greatest(1, ceil(v_wait)::integer), floor(v_wait * 1000)::integer,
                'requests_per_minute'::text, NULL::uuid;
            RETURN;
        END IF;
    END IF;
    -- Admitted: what follows is bookkeeping no response acknowledges (the rate's bucket, a lease, and the caller's
    -- last-use stamp written before this in the same statement), so its commit does not wait for the WAL.
    -- Transaction-local: it ends with the admitting statement, which runs alone in autocommit mode.
    PERFORM set_config('synchronous_commit', 'off', true);
    IF p_slots > 0 THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('account_leases:' || p_account::text, 0));
        SELECT count(*) INTO v_held FROM account_leases l
        WHERE l.account_id = p_account AND l.expires_at > v_now;
        IF v_held >= p_slots THEN
            RETURN QUERY SELECT 1, 0, 'concurrent_expensive_requests'::text, NULL::uuid;
            RETURN;
        END IF;
        DELETE FROM account_leases l WHERE l.account_id = p_account AND l.expires_at <= v_now;
        INSERT INTO account_leases (account_id, expires_at)
        VALUES (p_account, v_now + make_interval(secs => p_lease_s)) RETURNING id INTO v_lease;
    END IF;
    IF p_per_minute > 0 THEN
        INSERT INTO account_rate AS r (account_id, tat) VALUES (p_account, v_now + v_step)
        ON CONFLICT (account_id) DO UPDATE SET tat = greatest(r.tat, v_now) + v_step;
    END IF;
    RETURN QUERY SELECT 0, 0, NULL::text, v_lease;
END
$$;
