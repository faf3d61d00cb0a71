-- Shared package ingest (agentmate.packages): one SQL template that creates a registry's own table set.
--
-- Each registry (skills, knowledge) calls create_package_tables(<sources>, <revisions>, <files>) from its own
-- migration, so its tables keep its own names (spec/001, prior-art §3), carry their own RLS policy and can grow
-- registry-specific columns with ALTER TABLE (nullable or defaulted: the shared code inserts only the columns
-- below). The Python side (agentmate.packages.store.PackageStore) reads and writes exactly these columns.
--
--   <sources>    a package origin: git (server pull) or local (client push); unique per (account, name);
--                domain is derived from package_path on the server; active_revision_id is the revision the
--                last successful ingest produced or replayed; status pending|ready|error with last_error.
--   <revisions>  immutable ingested packages; one per (source, package_hash); never updated after insert.
--   <files>      one row per package file; text files keep content, binary files only sha256 and size.

CREATE FUNCTION create_package_tables(p_sources text, p_revisions text, p_files text) RETURNS void
    LANGUAGE plpgsql
AS $$
BEGIN
    EXECUTE format($ddl$
        CREATE TABLE %1$I (
            id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
            user_id uuid,
            key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
            name text NOT NULL,
            type text NOT NULL,
            sync_mode text GENERATED ALWAYS AS (CASE type WHEN 'git' THEN 'server_pull' ELSE 'client_push' END) STORED,
            repository_url text NOT NULL,
            package_path text NOT NULL DEFAULT '',
            domain text,
            default_ref text,
            status text NOT NULL DEFAULT 'pending',
            last_error text,
            last_commit_sha text,
            last_synced_at timestamptz,
            active_revision_id uuid,
            created_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now(),
            CONSTRAINT %2$I UNIQUE (id, account_id),
            CONSTRAINT %3$I UNIQUE (account_id, name),
            CONSTRAINT %4$I CHECK (type IN ('git', 'local')),
            CONSTRAINT %5$I CHECK (status IN ('pending', 'ready', 'error')),
            CONSTRAINT %6$I CHECK (char_length(name) BETWEEN 1 AND 128),
            CONSTRAINT %7$I CHECK (char_length(repository_url) BETWEEN 1 AND 2048),
            CONSTRAINT %8$I CHECK (char_length(package_path) <= 512)
        )$ddl$,
        p_sources, p_sources || '_id_account_key', p_sources || '_account_name_key', p_sources || '_type_check',
        p_sources || '_status_check', p_sources || '_name_check', p_sources || '_repository_url_check',
        p_sources || '_package_path_check');
    EXECUTE format('CREATE INDEX %I ON %I (account_id, created_at DESC, id)', p_sources || '_account_created_idx',
        p_sources);

    EXECUTE format($ddl$
        CREATE TABLE %1$I (
            id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
            source_id uuid NOT NULL,
            user_id uuid,
            key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
            package_hash text NOT NULL,
            origin text NOT NULL,
            ref text,
            commit_sha text,
            file_count integer NOT NULL,
            total_bytes bigint NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            CONSTRAINT %2$I UNIQUE (id, account_id),
            CONSTRAINT %3$I UNIQUE (id, source_id, account_id),
            CONSTRAINT %4$I UNIQUE (source_id, package_hash),
            CONSTRAINT %5$I FOREIGN KEY (source_id, account_id) REFERENCES %6$I (id, account_id) ON DELETE CASCADE,
            CONSTRAINT %7$I CHECK (package_hash ~ '^[0-9a-f]{64}$'),
            CONSTRAINT %8$I CHECK (origin IN ('git', 'snapshot')),
            CONSTRAINT %9$I CHECK (commit_sha IS NULL OR commit_sha ~ '^[0-9a-f]{40}([0-9a-f]{24})?$'),
            CONSTRAINT %10$I CHECK (file_count >= 1 AND total_bytes >= 0)
        )$ddl$,
        p_revisions, p_revisions || '_id_account_key', p_revisions || '_id_source_account_key',
        p_revisions || '_source_hash_key', p_revisions || '_source_fkey', p_sources,
        p_revisions || '_package_hash_check', p_revisions || '_origin_check', p_revisions || '_commit_sha_check',
        p_revisions || '_counts_check');
    EXECUTE format('CREATE INDEX %I ON %I (account_id, source_id, created_at DESC, id)',
        p_revisions || '_source_created_idx', p_revisions);

    -- The active pointer must name a revision of the same source in the same account (NO ACTION: deleting the
    -- source cascades its revisions in the same statement, which the check at statement end accepts).
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I FOREIGN KEY (active_revision_id, id, account_id) '
                   'REFERENCES %I (id, source_id, account_id)',
        p_sources, p_sources || '_active_revision_fkey', p_revisions);

    EXECUTE format($ddl$
        CREATE TABLE %1$I (
            id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
            revision_id uuid NOT NULL,
            path text NOT NULL,
            sha256 text NOT NULL,
            size_bytes bigint NOT NULL,
            mime_type text NOT NULL,
            is_text boolean NOT NULL,
            content text,
            CONSTRAINT %2$I UNIQUE (id, account_id),
            CONSTRAINT %3$I UNIQUE (revision_id, path),
            CONSTRAINT %4$I FOREIGN KEY (revision_id, account_id) REFERENCES %5$I (id, account_id) ON DELETE CASCADE,
            CONSTRAINT %6$I CHECK (sha256 ~ '^[0-9a-f]{64}$'),
            CONSTRAINT %7$I CHECK (size_bytes >= 0),
            CONSTRAINT %8$I CHECK (is_text = (content IS NOT NULL)),
            CONSTRAINT %9$I CHECK (char_length(path) BETWEEN 1 AND 512)
        )$ddl$,
        p_files, p_files || '_id_account_key', p_files || '_revision_path_key', p_files || '_revision_fkey',
        p_revisions, p_files || '_sha256_check', p_files || '_size_check', p_files || '_content_check',
        p_files || '_path_check');

    PERFORM enable_tenant_rls(p_sources::regclass);
    PERFORM enable_tenant_rls(p_revisions::regclass);
    PERFORM enable_tenant_rls(p_files::regclass);
END
$$;
