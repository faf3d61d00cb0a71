"""Test builds for wiki quality: a knowledge source with pushed documents, and succeeded wiki builds written
straight into the wiki's tables (migrations/0071) with exactly the pages, citations and links a test needs, so
every lint rule and review outcome can be triggered on purpose. Writes run under the tenant's own RLS."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from uuid import UUID

from agentmate.core.db import get_database
from agentmate.knowledge.sources import service
from agentmate.knowledge.sources.schemas import KnowledgeSnapshotPush
from agentmate.packages.schemas import FileInput, SourceInput
from agentmate.packages.service import Actor

MANIFEST = "name: Quality corpus\ninclude: ['docs/**']\n"
COMPILER_MODEL = "fake-compiler"


@dataclass
class PageSpec:
    path: str
    kind: str = "concept"
    content: str = "# Page\n"
    cites: list[str | tuple[str, str]] = field(default_factory=list)  # document path, or (path, claim)
    links: list[tuple[str, str]] = field(default_factory=list)  # (target path, link type)


def actor_of(account) -> Actor:
    return Actor(UUID(account.account_id), UUID(account.user_id))


def make_source(actor: Actor, name: str = "quality-kb") -> UUID:
    data = SourceInput(type="local", repository_url="file:///kb", package_path=f"kb/{name}")
    return service.register_source(get_database(), actor, data).source.id


def push(actor: Actor, source_id: UUID, docs: dict[str, str]) -> UUID:
    files = [FileInput(path="KNOWLEDGE.yaml", content=MANIFEST)] + [
        FileInput(path=p, content=c) for p, c in docs.items()
    ]
    return service.push_snapshot(
        get_database(), actor, source_id, KnowledgeSnapshotPush(files=files)
    ).revision.id


def make_build(
    actor: Actor,
    source_id: UUID,
    revision_id: UUID,
    pages: list[PageSpec],
    *,
    model: str = COMPILER_MODEL,
    activate: bool = True,
    status: str = "succeeded",
    age_days: int = 0,
) -> UUID:
    a = actor.account_id
    with get_database().tenant(a) as conn:
        package_hash = conn.execute(
            "SELECT package_hash FROM knowledge_source_revisions WHERE id = %s", (revision_id,)
        ).fetchone()["package_hash"]
        profile = conn.execute(
            """INSERT INTO knowledge_profile_versions (account_id, name, version, allowed_page_kinds,
                   allowed_link_types, citation_policy, max_pages, max_page_chars, max_build_tokens,
                   max_page_count_drift, settings_hash)
               VALUES (%s, 'quality-test', 1, %s, %s, 'optional', 200, 20000, 400000, 0.5, %s)
               ON CONFLICT (account_id, name, version) DO UPDATE SET name = EXCLUDED.name RETURNING id""",
            (
                a,
                ["summary", "entity", "concept", "overview", "synthesis", "index", "log"],
                ["references", "contradicts", "supersedes", "elaborates", "mentions_entity"],
                "0" * 64,
            ),
        ).fetchone()
        build = conn.execute(
            """INSERT INTO knowledge_builds (account_id, source_id, source_revision_id, raw_package_hash,
                   profile_version_id, compiler_version, prompt_version, model, reviewer_independence, mode,
                   status, check_status, finished_at)
               VALUES (%s, %s, %s, %s, %s, 'test-compiler', 'test-prompt', %s, 'unavailable', 'full', %s,
                       %s, now() - make_interval(days => %s)) RETURNING id""",
            (
                a,
                source_id,
                revision_id,
                package_hash,
                profile["id"],
                model,
                status,
                "passed" if status == "succeeded" else "failed",
                age_days,
            ),
        ).fetchone()["id"]
        docs = {
            r["path"]: r["id"]
            for r in conn.execute(
                "SELECT path, id FROM knowledge_documents WHERE revision_id = %s", (revision_id,)
            ).fetchall()
        }
        ids: dict[str, UUID] = {}
        for spec in pages:
            ids[spec.path] = conn.execute(
                """INSERT INTO knowledge_pages (account_id, build_id, path, kind, title, content, content_hash)
                   VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id""",
                (
                    a,
                    build,
                    spec.path,
                    spec.kind,
                    spec.path,
                    spec.content,
                    hashlib.sha256(spec.content.encode()).hexdigest(),
                ),
            ).fetchone()["id"]
        for spec in pages:
            for i, cite in enumerate(spec.cites):
                path, claim = (cite, "") if isinstance(cite, str) else cite
                conn.execute(
                    """INSERT INTO knowledge_page_citations (account_id, build_id, page_id, ordinal, document_id,
                           document_path, claim, excerpt) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)""",
                    (a, build, ids[spec.path], i, docs.get(path), path, claim, "compiler's own excerpt"),
                )
            for i, (target, link_type) in enumerate(spec.links):
                conn.execute(
                    """INSERT INTO knowledge_page_links (account_id, build_id, source_page_id, ordinal,
                           target_page_id, target_path, link_type) VALUES (%s, %s, %s, %s, %s, %s, %s)""",
                    (a, build, ids[spec.path], i, ids.get(target), target, link_type),
                )
        if activate:
            conn.execute(
                "UPDATE knowledge_sources SET active_build_id = %s WHERE id = %s", (build, source_id)
            )
    return build
