-- The re-embed job (issue 25 §2) reads and counts an account's projections still waiting for their vector
-- (failed, or pending past a grace): a small partial index keeps both cheap however large the account's index.
CREATE INDEX IF NOT EXISTS retrieval_documents_waiting_idx
    ON retrieval_documents (account_id, id)
    WHERE status IN ('failed', 'pending');
