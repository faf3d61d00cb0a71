"""The catalog of active skills (L0 cards), a version's instructions (L1) and its resources (L2). A version
without a current artifact shows a basic card and its stored body. REST: ``router.py``; MCP:
``agentmate.mcp.tools.skills.registry``."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import NotFound, invalid
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal
from agentmate.skills.catalog import repository as catrepo
from agentmate.skills.catalog.schemas import (
    SkillCard,
    SkillCatalogItem,
    SkillInstructions,
    SkillPackageFile,
    SkillResource,
    SkillResourceContent,
)
from agentmate.skills.compile import compiler, frontmatter
from agentmate.skills.compile import repository as crepo
from agentmate.skills.compile.service import current_artifact, file_in, indexable, version_context


def card_of(row: catrepo.CardRow) -> SkillCard:
    card = row.card or compiler.basic_card(
        version_id=str(row.id),
        skill_name=row.skill_name,
        version=row.version,
        package_hash=row.package_hash,
    )
    return SkillCard.model_validate(card)


def catalog(
    db: TenantTransactions, principal: Principal, page: PageParams, query: str | None = None
) -> Page[SkillCatalogItem]:
    with db.tenant(principal.account_id) as conn:
        rows, total = catrepo.catalog(
            conn, account_id=principal.account_id, query=query, limit=page.limit, offset=page.offset
        )
    items = [
        SkillCatalogItem(
            skill_version_id=r.id,
            skill_name=r.skill_name,
            version=r.version,
            source_id=r.source_id,
            compiled=r.card is not None,
            card=card_of(r),
        )
        for r in rows
    ]
    return Page[SkillCatalogItem](items=items, total=total, limit=page.limit, offset=page.offset)


def instructions(db: TenantTransactions, principal: Principal, version_id: UUID) -> SkillInstructions:
    with db.tenant(principal.account_id) as conn:
        ctx = version_context(conn, principal.account_id, version_id)
        art = current_artifact(
            crepo.artifact(conn, account_id=principal.account_id, version_id=version_id), ctx
        )
    base: dict[str, Any] = {
        "skill_version_id": version_id,
        "skill_name": ctx.skill_name,
        "version": ctx.version,
    }
    if art is not None:
        f = art.frontmatter
        return SkillInstructions(
            **base,
            compiled=True,
            name=f["name"],
            description=f["description"],
            compatibility=f["compatibility"],
            license=f["license"],
            metadata=f["metadata"],
            allowed_tools=f["allowed_tools"],
            knowledge_contract=art.knowledge_contract,
            knowledge_contract_identity=art.knowledge_contract_identity,
            instructions=art.instructions,
        )
    # No current artifact (not compiled yet, or the frontmatter does not compile): the body as stored.
    return SkillInstructions(
        **base,
        compiled=False,
        name=None,
        description="",
        compatibility=None,
        license=None,
        metadata={},
        allowed_tools=[],
        knowledge_contract=None,
        knowledge_contract_identity=None,
        instructions=frontmatter.body_of(ctx.content),
    )


def _manifest(conn: Conn, account_id: UUID, ctx: crepo.VersionContext) -> list[dict[str, Any]]:
    art = current_artifact(crepo.artifact(conn, account_id=account_id, version_id=ctx.id), ctx)
    if art is not None:
        return list(art.resource_manifest)
    if not ctx.source_revision_id:
        return []
    rows = crepo.revision_files(conn, account_id=account_id, revision_id=ctx.source_revision_id)
    return compiler.manifest_of([file_in(r) for r in rows])


def resources(
    db: TenantTransactions, principal: Principal, version_id: UUID, page: PageParams
) -> Page[SkillResource]:
    with db.tenant(principal.account_id) as conn:
        manifest = _manifest(
            conn, principal.account_id, version_context(conn, principal.account_id, version_id)
        )
    window = manifest[page.offset : page.offset + page.limit]
    return Page[SkillResource](
        items=[SkillResource.model_validate(m) for m in window],
        total=len(manifest),
        limit=page.limit,
        offset=page.offset,
    )


def resource(
    db: TenantTransactions, principal: Principal, version_id: UUID, file_id: UUID
) -> SkillResourceContent:
    with db.tenant(principal.account_id) as conn:
        ctx = version_context(conn, principal.account_id, version_id)
        row = (
            catrepo.revision_file(
                conn, account_id=principal.account_id, revision_id=ctx.source_revision_id, file_id=file_id
            )
            if ctx.source_revision_id
            else None
        )
    if row is None or row.path == compiler.ROOT_FILE:
        raise NotFound(
            "skill resource",
            "skill resource not found in this version's package (SKILL.md "
            "itself is served as the instructions)",
        )
    if row.content is None:
        raise invalid("file_id", "a binary resource has no text content; only its hash and size are stored")
    return SkillResourceContent(
        file_id=row.id,
        path=row.path,
        kind=compiler.resource_kind(row.path),
        mime_type=row.mime_type,
        size_bytes=row.size_bytes,
        sha256=row.sha256,
        indexable=indexable(row.mime_type, True),
        text_available=True,
        content=row.content,
    )


def files(
    db: TenantTransactions, principal: Principal, version_id: UUID, page: PageParams
) -> Page[SkillPackageFile]:
    with db.tenant(principal.account_id) as conn:
        ctx = version_context(conn, principal.account_id, version_id)
        rows, total = (
            catrepo.list_revision_files(
                conn,
                account_id=principal.account_id,
                revision_id=ctx.source_revision_id,
                limit=page.limit,
                offset=page.offset,
            )
            if ctx.source_revision_id
            else ([], 0)
        )
    items = [
        SkillPackageFile(
            **r,
            kind="instructions" if r["path"] == compiler.ROOT_FILE else compiler.resource_kind(r["path"]),
            indexable=indexable(r["mime_type"], r["is_text"]),
        )
        for r in rows
    ]
    return Page[SkillPackageFile](items=items, total=total, limit=page.limit, offset=page.offset)
