-- Memory: no accidental duplicates, retire and forget.
--
-- 1. content_key: sha256 of the normalised content (Unicode NFC, runs of whitespace collapsed to one space,
--    trimmed; case kept). A unique partial index over (account, memory_type, scope, content_key) of active entries
--    makes the database enforce "one active memory per content and scope", so concurrent identical stores
--    resolve to one entry (the service answers the loser with the winner, deduplicated: true).
-- 2. status_reason: why an entry was archived or invalidated (PATCH /api/memory/entries/:id).
-- 3. superseded_by_deleted: the id of a superseding entry that was deleted, so a chain with a deleted link says
--    so instead of silently skipping it.
-- 4. Two system event types the service writes (never accepted from clients): memory_retired (status change)
--    and memory_forgotten (a tombstone: only the entry id and the time).

-- convert_to is STABLE only because it depends on the database encoding, which never changes for a database:
-- declaring the wrapper IMMUTABLE is what lets it back a generated column and an index.
CREATE FUNCTION memory_content_key(content text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN encode(sha256(convert_to(btrim(regexp_replace(normalize(content, NFC),
        '[\s\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+', ' ', 'g')), 'UTF8')), 'hex');

ALTER TABLE memory_entries
    ADD COLUMN content_key text GENERATED ALWAYS AS (memory_content_key(content)) STORED,
    ADD COLUMN status_reason text NOT NULL DEFAULT '',
    ADD COLUMN superseded_by_deleted uuid,
    ADD CONSTRAINT memory_entries_status_reason_check CHECK (char_length(status_reason) <= 2000);

-- Existing duplicates: the oldest active entry of each group stays active; the others are archived (their window
-- closed, their evidence kept) so the unique index can be built. Search never serves archived entries, and their
-- retrieval documents go too (stale vector points are filtered out by status at query time).
WITH ranked AS (
    SELECT id, row_number() OVER (
               PARTITION BY account_id, memory_type, scope_type, scope_key, content_key
               ORDER BY created_at, id) AS n
    FROM memory_entries WHERE status = 'active'
), archived AS (
    UPDATE memory_entries e
    SET status = 'archived', updated_at = now(),
        status_reason = 'duplicate of an older active entry with the same content (migration 0040)',
        valid_to = greatest(e.valid_from, least(coalesce(e.valid_to, now()), now()))
    FROM ranked r WHERE r.id = e.id AND r.n > 1
    RETURNING e.id, e.account_id
)
DELETE FROM retrieval_documents d USING archived a
WHERE d.account_id = a.account_id AND d.namespace = 'memory' AND d.source_type = 'memory_entry'
  AND d.source_id = a.id::text;

CREATE UNIQUE INDEX memory_entries_active_content_key
    ON memory_entries (account_id, memory_type, scope_type, scope_key, content_key) WHERE status = 'active';

ALTER TABLE memory_events DROP CONSTRAINT memory_events_event_type_check;
ALTER TABLE memory_events ADD CONSTRAINT memory_events_event_type_check CHECK (event_type IN (
    'goal', 'observation', 'action', 'decision', 'issue', 'attempt', 'outcome', 'correction', 'checkpoint', 'note',
    'memory_retired', 'memory_forgotten'));
-- Journal sessions list sessions (newest activity first), optionally within one scope.
CREATE INDEX memory_events_scope_session_idx ON memory_events (account_id, scope_type, scope_key, session_id, occurred_at)
    WHERE session_id <> '';
