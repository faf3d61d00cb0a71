"""Validation signal use cases (spec/001 K3.9): report a signal (attributed on recorded evidence), list, summarise,
sweep for derived signals, and the skill-patterns view.

Signals record whether they were reported or derived, since an agent that never reports is indistinguishable from
one that had no trouble. A reported signal names the search it is about (``query_id``): without it nothing
separates a retrieval miss from a synthesis error, and attribution says so (unattributed) rather than guessing.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from agentmate.core.db import TenantTransactions
from agentmate.core.errors import Conflict, ErrorCollector, NotFound
from agentmate.core.idempotency import canonical_hash
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal
from agentmate.core.results import Created
from agentmate.knowledge.quality import attribution
from agentmate.knowledge.quality import validation_repository as repo
from agentmate.knowledge.quality.schemas import (
    Signal,
    SignalReport,
    SignalSummary,
    SkillPattern,
    SkillPatterns,
    SweepRequest,
    SweepResult,
)

LAYERS = [attribution.RAW_NAMESPACE, attribution.WIKI_NAMESPACE]
NEVER_RETRIEVED_DETAIL = (
    "no recorded search returned anything from this source and no recorded resolution "
    "selected it for {days} day(s) while its wiki was active"
)


def report(db: TenantTransactions, principal: Principal, body: SignalReport) -> Created[Signal]:
    """Record one reported signal; a replay of its idempotency key with the same body hands back the original."""
    a = principal.account_id
    content = body.model_dump(mode="json", exclude={"idempotency_key"})
    content_hash = canonical_hash(content)
    with db.tenant(a) as conn:
        if body.idempotency_key is not None:
            earlier = repo.by_key(conn, account_id=a, key=body.idempotency_key)
            if earlier is not None:
                return _replay(earlier, content_hash)
        source = repo.source(conn, account_id=a, source_id=body.source_id)
        if source is None:
            raise NotFound("knowledge source")
        errors = ErrorCollector()
        build_id = body.build_id or source["active_build_id"]
        if body.build_id and not repo.build_of_source(
            conn, account_id=a, build_id=body.build_id, source_id=body.source_id
        ):
            errors.add("build_id", "no such build of this knowledge source")
        elif body.page_path and build_id is None:
            errors.add("page_path", "this source has no wiki build, so no page can be named")
        elif (
            body.page_path
            and build_id
            and not repo.page_exists(conn, account_id=a, build_id=build_id, path=body.page_path)
        ):
            errors.add("page_path", f"no page at this path in build {build_id}")
        if body.skill_version_id and not repo.skill_version_exists(
            conn, account_id=a, skill_version_id=body.skill_version_id
        ):
            errors.add("skill_version_id", "no such skill version in this account")
        evidence = attribution.NO_QUERY
        if body.query_id is not None:
            search = repo.logged_search(conn, account_id=a, query_id=body.query_id)
            if search is None or search.namespace not in LAYERS:
                errors.add(
                    "query_id",
                    "no knowledge or wiki search with this id in this account (send the "
                    "query_id a knowledge or wiki search returned)",
                )
            else:
                evidence = attribution.evidence_from(
                    search, repo.same_question(conn, account_id=a, query_id=body.query_id, namespaces=LAYERS)
                )
        errors.raise_if_any()
        verdict = attribution.attribute(body.signal, body.page_path, evidence)
        values = {
            **content,
            "build_id": build_id,
            "source_id": body.source_id,
            "query_id": body.query_id,
            "skill_version_id": body.skill_version_id,
            "direction": attribution.SIGNAL_DIRECTIONS[body.signal],
            "origin": "reported",
            "cause": verdict.cause,
            "attribution_basis": verdict.basis,
            "idempotency_key": body.idempotency_key,
            "content_hash": content_hash,
        }
        signal = repo.insert(
            conn, account_id=a, user_id=principal.user_id, key_id=principal.key_id, values=values
        )
        if signal is None:  # a concurrent request with the same key committed first
            earlier = repo.by_key(conn, account_id=a, key=body.idempotency_key or "")
            if earlier is None:
                raise Conflict("a signal with this idempotency_key is being recorded; retry")
            return _replay(earlier, content_hash)
    return Created(signal)


def _replay(earlier: tuple[Signal, str], content_hash: str) -> Created[Signal]:
    signal, stored_hash = earlier
    if stored_hash != content_hash:
        raise Conflict("idempotency_key was already used with a different signal")
    return Created(signal, replay=True)


def list_signals(
    db: TenantTransactions, principal: Principal, page: PageParams, **filters: Any
) -> Page[Signal]:
    with db.tenant(principal.account_id) as conn:
        items, total = repo.list_signals(
            conn, account_id=principal.account_id, filters=filters, limit=page.limit, offset=page.offset
        )
    return Page[Signal](items=items, total=total, limit=page.limit, offset=page.offset)


def summary(db: TenantTransactions, principal: Principal, source_id: UUID | None) -> SignalSummary:
    a = principal.account_id
    with db.tenant(a) as conn:
        if source_id is not None and repo.source(conn, account_id=a, source_id=source_id) is None:
            raise NotFound("knowledge source")
        counts = repo.summary(conn, account_id=a, source_id=source_id)
    return SignalSummary(source_id=source_id, **counts)


def sweep(db: TenantTransactions, principal: Principal, body: SweepRequest) -> SweepResult:
    """Derive never_retrieved for every source whose active wiki no search and no resolution touched for
    ``idle_days``; at most one per source and UTC day, so a sweep on a timer adds nothing to an unchanged fact."""
    a = principal.account_id
    recorded: list[Signal] = []
    skipped = 0
    verdict = attribution.attribute("never_retrieved", None, attribution.NO_QUERY)
    with db.tenant(a) as conn:
        for row in repo.idle_sources(conn, account_id=a, idle_days=body.idle_days):
            values = {
                "source_id": row["source_id"],
                "build_id": row["build_id"],
                "page_path": None,
                "query_id": None,
                "session_id": "",
                "skill_version_id": None,
                "signal": "never_retrieved",
                "direction": "negative",
                "origin": "derived",
                "cause": verdict.cause,
                "attribution_basis": verdict.basis,
                "detail": NEVER_RETRIEVED_DETAIL.format(days=body.idle_days),
                "idempotency_key": None,
                "content_hash": canonical_hash(
                    {
                        "source_id": str(row["source_id"]),
                        "signal": "never_retrieved",
                        "idle_days": body.idle_days,
                    }
                ),
            }
            signal = repo.insert(
                conn, account_id=a, user_id=principal.user_id, key_id=principal.key_id, values=values
            )
            if signal is None:
                skipped += 1
            else:
                recorded.append(signal)
    return SweepResult(
        recorded=len(recorded), already_recorded=skipped, idle_days=body.idle_days, items=recorded
    )


def skill_patterns(db: TenantTransactions, principal: Principal, page: PageParams) -> SkillPatterns:
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.skill_patterns(
            conn, account_id=principal.account_id, limit=page.limit, offset=page.offset
        )
    items = [
        SkillPattern(
            skill_version_id=r["skill_version_id"],
            negative=r["negative"],
            positive=r["positive"],
            distinct_pages=r["distinct_pages"],
            distinct_sources=r["distinct_sources"],
            interpretation=attribution.interpret_skill_pattern(r["distinct_sources"], r["distinct_pages"]),
        )
        for r in rows
    ]
    return SkillPatterns(
        items=items, total=total, limit=page.limit, offset=page.offset, note=attribution.SKILL_PATTERNS_NOTE
    )
