-- Validation signals K3.9 (spec/001 "Knowledge", prior-art §3 migrations 32-33, §4.10): what an agent reports
-- after using an answer (origin reported) or what the platform derives from recorded searches and resolutions
-- (origin derived), each with its attribution: one of four layers or unattributed, and the rule that decided it.
-- Attribution is stored, not recomputed on read: it depends on what the raw and wiki layers returned at the
-- time, and both move. Signals are observations: append-only for the application.

CREATE TABLE knowledge_validation_signals (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid,
    key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
    source_id uuid NOT NULL,
    -- The build serving when it happened: a complaint about a wiki since recompiled is not about its successor.
    build_id uuid,
    page_path text,
    -- The logged search (retrieval_queries.id) the signal follows; checked against the account when recorded,
    -- kept as a plain id so a signal outlives the search log it was attributed from.
    query_id uuid,
    session_id text NOT NULL DEFAULT '',
    skill_version_id uuid,
    signal text NOT NULL,
    direction text NOT NULL,
    origin text NOT NULL,
    cause text NOT NULL,
    attribution_basis text NOT NULL,
    detail text NOT NULL DEFAULT '',
    idempotency_key text,
    content_hash text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT knowledge_validation_signals_id_account_key UNIQUE (id, account_id),
    CONSTRAINT knowledge_validation_signals_source_fkey FOREIGN KEY (source_id, account_id)
        REFERENCES knowledge_sources (id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_validation_signals_build_fkey FOREIGN KEY (build_id, source_id, account_id)
        REFERENCES knowledge_builds (id, source_id, account_id) ON DELETE SET NULL (build_id),
    CONSTRAINT knowledge_validation_signals_skill_version_fkey FOREIGN KEY (skill_version_id, account_id)
        REFERENCES skill_versions (id, account_id) ON DELETE SET NULL (skill_version_id),
    CONSTRAINT knowledge_validation_signals_signal_check CHECK (signal IN ('answer_adopted', 'citation_verified',
        'reused_for_similar', 'question_repeated', 'query_rephrased', 'citation_abandoned', 'answer_rewritten',
        'never_retrieved')),
    CONSTRAINT knowledge_validation_signals_direction_check CHECK (direction IN ('positive', 'negative')),
    CONSTRAINT knowledge_validation_signals_origin_check CHECK (origin IN ('reported', 'derived')),
    CONSTRAINT knowledge_validation_signals_cause_check CHECK (cause IN ('unattributed', 'wiki_synthesis',
        'retrieval_miss', 'source_gap', 'skill_approach')),
    CONSTRAINT knowledge_validation_signals_page_path_check CHECK (page_path IS NULL
        OR char_length(page_path) BETWEEN 1 AND 512),
    CONSTRAINT knowledge_validation_signals_session_id_check CHECK (char_length(session_id) <= 200),
    CONSTRAINT knowledge_validation_signals_detail_check CHECK (char_length(detail) <= 2000),
    CONSTRAINT knowledge_validation_signals_idempotency_key_check CHECK (idempotency_key IS NULL
        OR char_length(idempotency_key) BETWEEN 1 AND 255),
    CONSTRAINT knowledge_validation_signals_content_hash_check CHECK (content_hash ~ '^[0-9a-f]{64}$')
);
CREATE INDEX knowledge_validation_signals_source_idx
    ON knowledge_validation_signals (account_id, source_id, created_at DESC, id);
CREATE INDEX knowledge_validation_signals_recent_idx ON knowledge_validation_signals (account_id, created_at DESC, id);
CREATE INDEX knowledge_validation_signals_skill_idx ON knowledge_validation_signals (account_id, skill_version_id)
    WHERE skill_version_id IS NOT NULL;
-- A retrying agent records its report once.
CREATE UNIQUE INDEX knowledge_validation_signals_idempotency_key
    ON knowledge_validation_signals (account_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
-- A sweep on a timer must not turn one unchanged fact into a rising trend: one derived signal per source,
-- signal and UTC day.
CREATE UNIQUE INDEX knowledge_validation_signals_derived_daily_key
    ON knowledge_validation_signals (account_id, source_id, signal, ((created_at AT TIME ZONE 'UTC')::date))
    WHERE origin = 'derived';
SELECT enable_tenant_rls('knowledge_validation_signals');

REVOKE UPDATE ON knowledge_validation_signals FROM agentmate_app;
