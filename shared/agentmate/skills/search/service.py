"""Skill search: hybrid search over the indexed active cards, hydrated from Postgres in the search's transaction
(include_content loads each hit's L1), and indexing every active version (inline within the request's bounds, else
the ``skills_index`` job). REST: ``router.py``; MCP: ``agentmate.mcp.tools.skills.registry``."""

from __future__ import annotations

from uuid import UUID

from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.principal import Principal
from agentmate.retrieval import service as retrieval
from agentmate.retrieval.schemas import legs_of
from agentmate.retrieval.service import Retrieval
from agentmate.skills import batch
from agentmate.skills.catalog import repository as catrepo
from agentmate.skills.catalog.service import card_of
from agentmate.skills.compile import frontmatter
from agentmate.skills.search.index import NAMESPACE, SOURCE_TYPE, index_versions, waiting
from agentmate.skills.search.schemas import (
    SkillDegraded,
    SkillIndexReport,
    SkillIndexRequest,
    SkillSearchHit,
    SkillSearchRequest,
    SkillSearchResponse,
)

INDEX_KIND = "skills_index"  # registered in search/jobs.py


def index_active(
    db: TenantTransactions, rt: Retrieval, principal: Principal, body: SkillIndexRequest
) -> SkillIndexReport:
    """Index inline up to MAX_INLINE_VERSIONS active versions, else queue the run as a job (202 with it)."""
    ids = batch.inline_ids(db, principal.account_id, body.skill_name)
    if ids is None:
        job = batch.queue(db, principal.account_id, INDEX_KIND, body.skill_name)
        return SkillIndexReport(
            items=[], indexed=0, failed=0, total=0, job=job, waiting=waiting(db, principal.account_id)
        )
    items = index_versions(db, rt, principal.account_id, ids)
    indexed = sum(1 for i in items if i.status == "indexed")
    return SkillIndexReport(
        items=items,
        indexed=indexed,
        failed=len(items) - indexed,
        total=len(items),
        waiting=waiting(db, principal.account_id),
    )


def search(
    db: TenantTransactions, rt: Retrieval, principal: Principal, body: SkillSearchRequest
) -> SkillSearchResponse:
    account = principal.account_id

    def hydrate(conn: Conn, result: retrieval.SearchResult) -> SkillSearchResponse:
        wanted: list[tuple[UUID, retrieval.Hit]] = []
        for hit in result.hits:
            try:
                wanted.append((UUID(str((hit.document.get("metadata") or {}).get("skill_version_id"))), hit))
            except ValueError:
                continue
        filtered = 0
        if body.min_similarity is not None:
            kept = [(v, h) for v, h in wanted if h.similar_enough(body.min_similarity)]
            filtered, wanted = len(wanted) - len(kept), kept
        rows = catrepo.cards(
            conn,
            account_id=account,
            version_ids=[v for v, _ in wanted],
            with_instructions=body.include_content,
        )
        items = []
        for vid, hit in wanted:
            row = rows.get(vid)
            if row is None:  # deactivated or deleted since it was indexed
                continue
            text = None
            if body.include_content:
                text = (
                    row.instructions
                    if row.instructions is not None
                    else frontmatter.body_of(row.content or "")
                )
            items.append(
                SkillSearchHit(
                    skill_version_id=vid,
                    skill_name=row.skill_name,
                    version=row.version,
                    score=hit.score,
                    card=card_of(row),
                    instructions=text,
                    **legs_of(hit),
                )
            )
        return SkillSearchResponse(
            items=items,
            total=len(items),
            degraded=[SkillDegraded(leg=d.leg, reason=d.reason) for d in result.degraded],
            filtered_by_min_similarity=filtered if body.min_similarity is not None else None,
        )

    query = retrieval.Query(namespace=NAMESPACE, text=body.query, top_k=body.top_k, source_type=SOURCE_TYPE)
    pending = rt.begin_search(account, query)  # the vector leg starts on its thread
    with db.tenant(account, pipeline=True) as conn:  # the hits and the rows hydrate() reads: one transaction
        return hydrate(conn, pending.complete(conn))
