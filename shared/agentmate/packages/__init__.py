"""Shared package ingest for the registries (skills, knowledge): sources, immutable revisions, file records,
the canonical package hash, git sync with SSRF protection, and limits against hostile packages.

Nothing here knows what a skill or a knowledge base is; registries plug their rules in through two hooks.

Data model (migrations/0050_package_tables.sql)
    Each registry owns its own three tables, created from one SQL template by its own migration::

        SELECT create_package_tables('skill_sources', 'skill_source_revisions', 'skill_revision_files');

    so each table keeps the registry's name, its own RLS policy and composite account-scoped foreign keys, and may
    grow registry columns (nullable or defaulted) with ALTER TABLE.

    * source   (schemas.Source)   name unique per account; type ``git`` (server pull) or ``local`` (client
      push); repository_url, package_path, derived ``domain`` (first segment of a ≥2-segment package_path, never
      from the client), default_ref, status ``pending|ready|error`` + last_error, last_commit_sha,
      active_revision_id (the revision the last successful ingest produced or replayed).
    * revision (schemas.Revision) immutable; unique per (source, package_hash); origin ``git`` (ref, commit_sha)
      or ``snapshot``; file_count, total_bytes.
    * file     (schemas.FileMeta / FileRecord) path, sha256, size_bytes, mime_type, is_text; text files keep
      their content snapshot, binary files only hash and size.

Identity (identity.py, prior-art §4.10)
    package_hash = sha256 hex of the sorted lines ``path\\0sha256hex\\0size`` joined by ``\\n``.
    Default source name = package_path segments joined by ``-`` (platform/retrieval → platform-retrieval).

Limits (limits.py)
    SNAPSHOT_LIMITS (1,000 files, 1 MiB per file, 3 MiB per package: a JSON snapshot fits Lambda's 6 MB request
    limit), GIT_LIMITS (2,000 files, 2 MiB, 16 MiB), SyncLimits (download, archive bytes/members, time budget
    20 s, under API Gateway's 30 s). A breached limit is ``TooLarge`` (413) naming it; a bad path, NUL byte or
    invalid UTF-8 in a text file is ``ValidationFailed`` (400) naming the field. Nothing is written then.

How to use (a registry's repository/service)::

    from agentmate.packages import PackageStore, PackageTables, service as packages
    STORE = PackageStore(PackageTables("skill_sources", "skill_source_revisions", "skill_revision_files"))

    actor = packages.Actor(principal.account_id, principal.user_id, principal.key_id)
    with db.tenant(actor.account_id) as conn:                       # register / upsert by name
        up = packages.register_source(conn, STORE, actor, SourceInput(...), policy)   # Upserted(source, created)
    out = packages.push_snapshot(db, STORE, actor, source_id, body.files,            # local sources
                                 expected_hash=body.package_hash, select=..., on_revision=...)
    out = packages.sync_source(db, STORE, actor, source_id, fetcher, ref="main",     # git sources
                               select=..., on_revision=...)
    out.ingested.revision / .source / .created (False = package hash replayed, source re-targeted); out.extra
    with db.tenant(...) as conn: STORE.list_sources / get_source / list_revisions / list_files (no content) /
        get_file / file_by_path / all_files (content, path order) / delete_source

    ``select(package) -> package`` runs before the revision is written (filter with ``service.subset``, validate
    a manifest, raise a DomainError to refuse); ``on_revision(conn, ingested) -> T`` runs inside the ingest
    transaction for the registry's own rows (a raise rolls the whole ingest back). Work that must happen
    *after* commit (compile, index) the registry does after the call returns. A failed sync (fetch, limits,
    select or on_revision) marks the source ``error`` with the reason and leaves no revision.

    The repository declares the template's constraints for the driver-error translation::

        CONSTRAINTS = constraints({**template_constraints(TABLES), ...registry's own...})   # store.py

    The URL policy and fetcher come from settings (``PACKAGES_*`` env, limits.PackageSettings: ALLOWED_HOSTS,
    ALLOWED_SCHEMES, ALLOWED_PRIVATE_NETWORKS, ARCHIVE_PROVIDERS, GIT_TOKENS, MAX_*, SYNC_BUDGET_S)::

        settings = PackageSettings(); policy = NetPolicy.from_settings(settings)   # policy.py (no HTTP imports)
        fetcher = GitFetcher(policy, settings)     # agentmate.packages.git: import it only where a sync runs

    Errors a sync raises: ValidationFailed (400: refused URL/address → ``repository_url``, unknown ref → ``ref``,
    hostile entries → ``package``), TooLarge (413 naming the limit, including ``sync_budget_s``),
    ServiceUnavailable (503: the host failed), NotFound / Conflict (unknown source / not a git source).

    Tests: tests/integration/packages/gitserver.py runs dulwich's smart-HTTP server on loopback with
    GitHub-like archive redirects to a codeload-like host; test_packages_git.make_policy() widens the policy.
"""

from typing import TYPE_CHECKING

from agentmate.core.lazy import lazy_exports

if TYPE_CHECKING:
    from agentmate.packages.limits import (
        GIT_LIMITS,
        SNAPSHOT_LIMITS,
        PackageLimits,
        PackageSettings,
        SyncLimits,
    )
    from agentmate.packages.policy import NetPolicy
    from agentmate.packages.schemas import (
        FileInput,
        FileMeta,
        FileRecord,
        Ingested,
        Package,
        PackageFile,
        Revision,
        Source,
        SourceInput,
        Upserted,
    )
    from agentmate.packages.store import PackageStore, PackageTables

# Loaded on first use (cold start): a router that imports agentmate.packages.schemas loads nothing else.
__getattr__ = lazy_exports(
    __name__,
    {
        "limits": ("GIT_LIMITS", "SNAPSHOT_LIMITS", "PackageLimits", "PackageSettings", "SyncLimits"),
        "schemas": (
            "FileInput",
            "FileMeta",
            "FileRecord",
            "Ingested",
            "Package",
            "PackageFile",
            "Revision",
            "Source",
            "SourceInput",
            "Upserted",
        ),
        "policy": ("NetPolicy",),
        "store": ("PackageStore", "PackageTables"),
    },
)

__all__ = [
    "GIT_LIMITS",
    "SNAPSHOT_LIMITS",
    "FileInput",
    "FileMeta",
    "FileRecord",
    "Ingested",
    "NetPolicy",
    "Package",
    "PackageFile",
    "PackageLimits",
    "PackageSettings",
    "PackageStore",
    "PackageTables",
    "Revision",
    "Source",
    "SourceInput",
    "SyncLimits",
    "Upserted",
]
