-- Stored-volume counters (issue 25 §1): the memories and working-items quotas are checked on every store, so
-- what an account holds is kept here by triggers instead of counted (a bounded count of 100,000 rows cost
-- 20-30 ms a store: bench/quota_cost.py). One row per account and shard: a writer adds to the shard of its
-- backend (pg_backend_pid() % 16), so concurrent writers of one account rarely wait on the same row; the
-- account's count is the sum of its few rows. The counts are transactional (a rolled-back insert counts
-- nothing) and exact at commit. The rows are tenant rows (RLS), written only by the trigger function.

CREATE TABLE account_usage (
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    shard smallint NOT NULL,
    memories bigint NOT NULL DEFAULT 0,
    working_items bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, shard)
);
SELECT enable_tenant_rls('account_usage');

-- TG_ARGV[0]: the counter ('memories' or 'working_items'). Statement-level, over the transition table: one
-- upsert per statement and account whatever the rows. A delete cascaded from the account's own deletion
-- counts nothing (its account_usage rows go with it).
CREATE FUNCTION account_usage_count() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
AS $$
DECLARE
    v_shard smallint := pg_backend_pid() % 16;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF TG_ARGV[0] = 'memories' THEN
            INSERT INTO account_usage AS u (account_id, shard, memories)
            SELECT n.account_id, v_shard, count(*) FROM new_rows n GROUP BY n.account_id
            ON CONFLICT (account_id, shard) DO UPDATE SET memories = u.memories + excluded.memories;
        ELSE
            INSERT INTO account_usage AS u (account_id, shard, working_items)
            SELECT n.account_id, v_shard, count(*) FROM new_rows n GROUP BY n.account_id
            ON CONFLICT (account_id, shard) DO UPDATE SET working_items = u.working_items + excluded.working_items;
        END IF;
    ELSIF TG_ARGV[0] = 'memories' THEN
        INSERT INTO account_usage AS u (account_id, shard, memories)
        SELECT o.account_id, v_shard, -count(*) FROM old_rows o
        WHERE EXISTS (SELECT 1 FROM accounts a WHERE a.id = o.account_id) GROUP BY o.account_id
        ON CONFLICT (account_id, shard) DO UPDATE SET memories = u.memories + excluded.memories;
    ELSE
        INSERT INTO account_usage AS u (account_id, shard, working_items)
        SELECT o.account_id, v_shard, -count(*) FROM old_rows o
        WHERE EXISTS (SELECT 1 FROM accounts a WHERE a.id = o.account_id) GROUP BY o.account_id
        ON CONFLICT (account_id, shard) DO UPDATE SET working_items = u.working_items + excluded.working_items;
    END IF;
    RETURN NULL;
END
$$;

-- Writers wait while the counters are created and filled, so none is missed or counted twice.
LOCK TABLE memory_entries, working_items IN SHARE ROW EXCLUSIVE MODE;

CREATE TRIGGER memory_entries_usage_insert AFTER INSERT ON memory_entries
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION account_usage_count('memories');
CREATE TRIGGER memory_entries_usage_delete AFTER DELETE ON memory_entries
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION account_usage_count('memories');
CREATE TRIGGER working_items_usage_insert AFTER INSERT ON working_items
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION account_usage_count('working_items');
CREATE TRIGGER working_items_usage_delete AFTER DELETE ON working_items
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION account_usage_count('working_items');

INSERT INTO account_usage (account_id, shard, memories, working_items)
SELECT account_id, 0, sum(m), sum(w)
FROM (SELECT account_id, count(*) AS m, 0 AS w FROM memory_entries GROUP BY account_id
      UNION ALL
      SELECT account_id, 0, count(*) FROM working_items GROUP BY account_id) c
GROUP BY account_id;
