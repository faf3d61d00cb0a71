-- Expenses: amounts are numeric(12,2) in an ISO 4217 currency. Mixed currencies are never summed (the summary
-- groups by currency). The application checks codes against its list of active codes; the database only
-- requires the shape, so the list can change without a migration.
CREATE TABLE expenses (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id uuid,
    key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
    amount numeric(12, 2) NOT NULL,
    currency text NOT NULL,
    description text NOT NULL DEFAULT '',
    tags text[] NOT NULL DEFAULT '{}',
    source text,
    happened_at timestamptz NOT NULL DEFAULT now(),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT expenses_id_account_key UNIQUE (id, account_id),
    CONSTRAINT expenses_amount_check CHECK (amount > 0),
    CONSTRAINT expenses_currency_check CHECK (currency ~ '^[A-Z]{3}$'),
    CONSTRAINT expenses_description_check CHECK (char_length(description) <= 2000),
    CONSTRAINT expenses_source_check CHECK (char_length(source) BETWEEN 1 AND 255)
);
CREATE INDEX expenses_account_happened_idx ON expenses (account_id, happened_at DESC);
CREATE INDEX expenses_tags_idx ON expenses USING gin (tags);
SELECT enable_tenant_rls('expenses');
