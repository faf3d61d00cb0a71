-- Faithfulness review K3.8 (spec/001 "Knowledge" and "Wiki compiler (K3)", prior-art §3 migration 31, §4.8).
-- A review is its own job on the compile queue (kind wiki_review): one row per review of a build, queued after
-- activation or by POST /builds/{id}/review, with the verdict, its coverage and what it cost; the findings of
-- that review beside it. The latest finished review of a build is its current verdict (re-review replaces the
-- verdict, never merges two sets of findings), and its status is mirrored onto knowledge_builds.review_status.

CREATE TABLE knowledge_build_reviews (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid,
    key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
    build_id uuid NOT NULL,
    source_id uuid NOT NULL,
    job_id uuid,
    requested_by text NOT NULL,
    status text NOT NULL DEFAULT 'queued',
    compiler_model text NOT NULL,
    reviewer_model text,
    reviewer_prompt_version text NOT NULL,
    reviewer_independence text NOT NULL,
    page_limit integer NOT NULL,
    pages_total integer NOT NULL DEFAULT 0,
    pages_examined integer NOT NULL DEFAULT 0,
    pages_failed integer NOT NULL DEFAULT 0,
    findings_total integer NOT NULL DEFAULT 0,
    note text NOT NULL DEFAULT '',
    input_tokens bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    cost_micros bigint NOT NULL DEFAULT 0,
    queued_at timestamptz NOT NULL DEFAULT now(),
    started_at timestamptz,
    finished_at timestamptz,
    CONSTRAINT knowledge_build_reviews_id_account_key UNIQUE (id, account_id),
    CONSTRAINT knowledge_build_reviews_build_fkey FOREIGN KEY (build_id, source_id, account_id)
        REFERENCES knowledge_builds (id, source_id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_build_reviews_job_fkey FOREIGN KEY (job_id, account_id)
        REFERENCES jobs (id, account_id) ON DELETE SET NULL (job_id),
    CONSTRAINT knowledge_build_reviews_requested_by_check CHECK (requested_by IN ('activation', 'request')),
    CONSTRAINT knowledge_build_reviews_status_check CHECK (status IN ('queued', 'running', 'clean', 'partial',
        'flagged', 'failed', 'skipped')),
    CONSTRAINT knowledge_build_reviews_independence_check CHECK (reviewer_independence IN ('cross_provider',
        'same_provider', 'same_model', 'unavailable')),
    CONSTRAINT knowledge_build_reviews_counts_check CHECK (page_limit >= 1 AND pages_total >= 0
        AND pages_examined >= 0 AND pages_failed >= 0 AND pages_examined + pages_failed <= pages_total
        AND findings_total >= 0 AND input_tokens >= 0 AND output_tokens >= 0 AND cost_micros >= 0)
);
CREATE INDEX knowledge_build_reviews_build_idx ON knowledge_build_reviews (account_id, build_id, queued_at DESC, id);
-- One unfinished review per build: a second request while one waits hands back the waiting one.
CREATE UNIQUE INDEX knowledge_build_reviews_active_key ON knowledge_build_reviews (account_id, build_id)
    WHERE status IN ('queued', 'running');
SELECT enable_tenant_rls('knowledge_build_reviews');

CREATE TABLE knowledge_review_findings (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    review_id uuid NOT NULL,
    ordinal integer NOT NULL,
    page_path text NOT NULL,
    kind text NOT NULL,
    claim text NOT NULL,
    detail text NOT NULL DEFAULT '',
    CONSTRAINT knowledge_review_findings_review_fkey FOREIGN KEY (review_id, account_id)
        REFERENCES knowledge_build_reviews (id, account_id) ON DELETE CASCADE,
    CONSTRAINT knowledge_review_findings_review_ordinal_key UNIQUE (review_id, ordinal),
    CONSTRAINT knowledge_review_findings_kind_check CHECK (kind IN ('unsupported', 'overstated',
        'fabricated_causality', 'conflated')),
    CONSTRAINT knowledge_review_findings_text_check CHECK (char_length(claim) BETWEEN 1 AND 2000
        AND char_length(detail) <= 2000)
);
SELECT enable_tenant_rls('knowledge_review_findings');

-- A finished build stays immutable except for its review verdict and who gave it: review runs after the build
-- succeeded (after activation), so those three columns are the only ones a finished build may still change.
CREATE OR REPLACE FUNCTION knowledge_builds_immutable() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    IF OLD.status IN ('succeeded', 'failed', 'cancelled')
       AND to_jsonb(NEW) - ARRAY['review_status', 'reviewer_model', 'reviewer_independence']
           IS DISTINCT FROM to_jsonb(OLD) - ARRAY['review_status', 'reviewer_model', 'reviewer_independence'] THEN
        RAISE EXCEPTION 'knowledge build % is finished and immutable', OLD.id USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    RETURN NEW;
END
$$;
