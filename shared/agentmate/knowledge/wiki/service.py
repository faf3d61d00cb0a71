"""Wiki compiler use cases: enqueue a compile, read builds, pages, diffs and events, activate (and roll back).

Enqueue only writes a queued build row and the queue's ``wiki_compile`` job (``agentmate.jobs``) in the same
transaction, then wakes a worker after the commit: nothing is compiled in the request. Reuse keys on input identity (source revision, profile version, compiler version, prompt version, model,
mode and, for incremental builds, parent), never on a content hash: a build is not reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol
from uuid import UUID

from agentmate import jobs
from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import Conflict, NotFound, NotImplementedYet
from agentmate.core.limits import service as limits
from agentmate.core.limits.settings import get_limit_settings
from agentmate.core.observability import logger
from agentmate.core.pagination import Page, PageParams
from agentmate.knowledge.quality.review import standing_warning
from agentmate.knowledge.quality.review_service import enqueue_after_activation as enqueue_review
from agentmate.knowledge.wiki import reindex
from agentmate.knowledge.wiki import repository as repo
from agentmate.knowledge.wiki.compiler import DEFAULT_MAX_ATTEMPTS
from agentmate.knowledge.wiki.profiles import DEFAULT_PROFILE, settings_for
from agentmate.knowledge.wiki.prompt import COMPILER_VERSION, PROMPT_VERSION
from agentmate.knowledge.wiki.repository import BuildRow, BuildView, WikiSourceRow
from agentmate.knowledge.wiki.schemas import (
    ActivateResult,
    BuildDiff,
    BuildEvent,
    Citation,
    CompileRequest,
    CompileResult,
    DiffEntry,
    PageLink,
    PageMeta,
    ProfileRef,
    WikiBuild,
    WikiIndexOutcome,
    WikiPage,
)
from agentmate.llm import config_from_settings, independence
from agentmate.llm.settings import ModelSettings, get_model_settings
from agentmate.retrieval.service import Retrieval

JOB_KIND = "wiki_compile"
REVIEW_WARNING = standing_warning(
    None
)  # issue 15: unconditional, worded per build by GET /builds/{id}/review


class Caller(Protocol):
    @property
    def account_id(self) -> UUID: ...
    @property
    def user_id(self) -> UUID | None: ...
    @property
    def key_id(self) -> UUID | None: ...


@dataclass(frozen=True)
class Compiled:
    result: CompileResult
    queued: bool


def to_build(row: BuildView) -> WikiBuild:
    return WikiBuild.model_validate(
        {
            **row,
            "profile": ProfileRef(
                id=row["profile_version_id"], name=row["profile_name"], version=row["profile_version"]
            ),
            "is_active": bool(row["is_active"]),
        }
    )


def warnings_for(independence_class: str) -> list[str]:
    out = [REVIEW_WARNING]
    if independence_class != "cross_provider":
        out.append(
            f"reviewer independence is {independence_class}: point REVIEWER_BASE_URL and REVIEWER_MODEL at a "
            "different provider than the compiler for a cross_provider reviewer"
        )
    return out


def compile_source(
    db: TenantTransactions, caller: Caller, req: CompileRequest, *, settings: ModelSettings | None = None
) -> Compiled:
    settings = settings or get_model_settings()
    compiler = config_from_settings("compiler", settings)
    if compiler is None:
        raise NotImplementedYet(
            "no compiler model is configured: set COMPILER_BASE_URL (or EMBEDDING_BASE_URL) "
            "and COMPILER_MODEL; this is an operator gap, not a failed build"
        )
    reviewer = config_from_settings("reviewer", settings)
    indep = independence(compiler, reviewer)
    warnings = warnings_for(indep)
    a = caller.account_id
    with db.tenant(a) as conn:
        src = _compilable_source(conn, a, req.source_id)
        manifest = src["manifest"] or {}
        name = manifest.get("profile") or DEFAULT_PROFILE
        profile = repo.ensure_profile(conn, account_id=a, name=name, settings=settings_for(name))
        parent = _parent(conn, a, src)
        if req.mode == "incremental":
            _refuse_incremental(parent, profile.id, compiler.model)
            assert parent is not None
        reused = _reused(conn, a, req, src, parent, profile.id, compiler.model)
        if reused is not None:
            return Compiled(
                CompileResult(build=to_build(reused[0]), queued=False, warnings=[*warnings, reused[1]]), False
            )
        identity = {
            "source_revision_id": src["active_revision_id"],
            "raw_package_hash": src["package_hash"],
            "profile_version_id": profile.id,
            "model": compiler.model,
            "reviewer_model": reviewer.model if reviewer else None,
            "reviewer_independence": indep,
            "parent_build_id": parent["id"] if parent else None,
        }
        limits.require_room(conn, "builds_per_day", get_limit_settings().max_builds_per_day)
        job, row = _queue_build(conn, caller, req, identity)
    jobs.wake(job.id)
    return Compiled(CompileResult(build=to_build(row), queued=True, warnings=warnings), True)


def _compilable_source(conn: Conn, account_id: UUID, source_id: UUID) -> WikiSourceRow:
    """The source, locked for the compile's transaction; it must have an active revision."""
    src = repo.source(conn, account_id=account_id, source_id=source_id, lock=True)
    if src is None:
        raise NotFound("knowledge source")
    if src["active_revision_id"] is None:
        raise Conflict(
            "the source has no active revision yet: sync or push a snapshot first",
            extra={"reason": "no_active_revision"},
        )
    return src


def _reused(
    conn: Conn,
    account_id: UUID,
    req: CompileRequest,
    src: WikiSourceRow,
    parent: BuildRow | None,
    profile_version_id: UUID,
    model: str,
) -> tuple[BuildView, str] | None:
    """A build that answers the request without queueing (with the warning that says why), or None: the parent
    of an incremental compile when the sources have not changed, else a build of the same input identity
    (unless ``force``)."""
    if req.mode == "incremental" and parent is not None:
        if parent["source_revision_id"] == src["active_revision_id"] and not req.force:
            existing = repo.get_build(conn, account_id=account_id, build_id=parent["id"])
            assert existing is not None
            return existing, (
                "the sources have not changed since the parent build: it is returned and nothing was queued"
            )
    if req.force:
        return None
    assert src["active_revision_id"] is not None  # _compilable_source refused a source without one
    match = repo.matching_build(
        conn,
        account_id=account_id,
        source_id=req.source_id,
        revision_id=src["active_revision_id"],
        profile_version_id=profile_version_id,
        model=model,
        mode=req.mode,
        parent_build_id=parent["id"] if parent else None,
    )
    if match is None:
        return None
    return match, (
        f"build {match['id']} ({match['status']}) has the same input identity: it is returned "
        "and nothing was queued (force=true compiles anyway)"
    )


def _queue_build(
    conn: Conn, caller: Caller, req: CompileRequest, identity: dict[str, Any]
) -> tuple[jobs.Job, BuildView]:
    """Insert the queued build (its input identity plus the request's options), its first event and its
    ``wiki_compile`` job, in the caller's transaction; the caller wakes the job after the commit."""
    a = caller.account_id
    build_id = repo.insert_build(
        conn,
        account_id=a,
        values={
            "user_id": caller.user_id,
            "key_id": caller.key_id,
            "source_id": req.source_id,
            "source_revision_id": identity["source_revision_id"],
            "raw_package_hash": identity["raw_package_hash"],
            "profile_version_id": identity["profile_version_id"],
            "compiler_version": COMPILER_VERSION,
            "prompt_version": PROMPT_VERSION,
            "model": identity["model"],
            "reviewer_model": identity["reviewer_model"],
            "reviewer_independence": identity["reviewer_independence"],
            "parent_build_id": identity["parent_build_id"],
            "mode": req.mode,
            "activate_on_success": req.activate,
            "forced": req.force,
        },
    )
    repo.add_events(
        conn,
        account_id=a,
        build_id=build_id,
        events=[
            {
                "event_type": "build_queued",
                "detail": f"{req.mode} compile of revision {identity['source_revision_id']}",
                "payload": {"mode": req.mode, "force": req.force, "activate": req.activate},
            }
        ],
    )
    job = jobs.enqueue(
        conn,
        account_id=a,
        kind=JOB_KIND,
        subject_id=build_id,
        payload={"build_id": str(build_id)},
        max_attempts=DEFAULT_MAX_ATTEMPTS,
    )
    repo.set_job(conn, account_id=a, build_id=build_id, job_id=job.id)
    row = repo.get_build(conn, account_id=a, build_id=build_id)
    assert row is not None
    return job, row


def _parent(conn: Conn, account_id: UUID, src: WikiSourceRow) -> BuildRow | None:
    """The build a new one diffs against: the serving build when it succeeded, else the newest succeeded one."""
    if src["active_build_id"] is not None:
        active = repo.build_row(conn, account_id=account_id, build_id=src["active_build_id"])
        if active is not None and active["status"] == "succeeded":
            return active
    return repo.latest_succeeded(conn, account_id=account_id, source_id=src["id"])


def _refuse_incremental(parent: BuildRow | None, profile_id: UUID, model: str) -> None:
    if parent is None:
        raise Conflict(
            "incremental compile refused: the source has no previous succeeded build to diff against; "
            "compile with mode=full first",
            extra={"reason": "no_parent"},
        )
    differs = [
        name
        for name, now, then in (
            ("model", model, parent["model"]),
            ("prompt_version", PROMPT_VERSION, parent["prompt_version"]),
            ("compiler_version", COMPILER_VERSION, parent["compiler_version"]),
            ("profile_version", profile_id, parent["profile_version_id"]),
        )
        if now != then
    ]
    if differs:
        raise Conflict(
            f"incremental compile refused: the parent build {parent['id']} came from a different "
            f"{', '.join(differs)}; carrying its pages forward would stamp this build's provenance on "
            "text that configuration never produced. Compile with mode=full",
            extra={"reason": "provenance_differs", "differs": differs, "parent_build_id": str(parent["id"])},
        )


def _build(conn: Conn, account_id: UUID, build_id: UUID) -> BuildView:
    row = repo.get_build(conn, account_id=account_id, build_id=build_id)
    if row is None:
        raise NotFound("build")
    return row


def list_builds(
    db: TenantTransactions, caller: Caller, source_id: UUID | None, page: PageParams
) -> Page[WikiBuild]:
    a = caller.account_id
    with db.tenant(a) as conn:
        if source_id is not None and repo.source(conn, account_id=a, source_id=source_id) is None:
            raise NotFound("knowledge source")
        rows, total = repo.list_builds(
            conn, account_id=a, source_id=source_id, limit=page.limit, offset=page.offset
        )
    return Page(items=[to_build(r) for r in rows], total=total, limit=page.limit, offset=page.offset)


def get_build(db: TenantTransactions, caller: Caller, build_id: UUID) -> WikiBuild:
    with db.tenant(caller.account_id) as conn:
        return to_build(_build(conn, caller.account_id, build_id))


def list_pages(db: TenantTransactions, caller: Caller, build_id: UUID, page: PageParams) -> Page[PageMeta]:
    a = caller.account_id
    with db.tenant(a) as conn:
        _build(conn, a, build_id)
        rows, total = repo.list_pages(
            conn, account_id=a, build_id=build_id, limit=page.limit, offset=page.offset
        )
    return Page(
        items=[PageMeta.model_validate(r) for r in rows], total=total, limit=page.limit, offset=page.offset
    )


def get_page(db: TenantTransactions, caller: Caller, build_id: UUID, path: str) -> WikiPage:
    a = caller.account_id
    with db.tenant(a) as conn:
        _build(conn, a, build_id)
        row = repo.get_page(conn, account_id=a, build_id=build_id, path=path)
        if row is None:
            raise NotFound("page", f"page {path!r} not found in build {build_id}")
        cites = repo.page_citations(conn, account_id=a, page_ids=[row["id"]])
        links = repo.page_links(conn, account_id=a, page_ids=[row["id"]])
    return WikiPage.model_validate(
        {
            **row,
            "citations": [Citation.model_validate(c) for c in cites],
            "links_out": [
                PageLink(path=x["other_path"], link_type=x["link_type"], exists=x["exists"])
                for x in links
                if x["direction"] == "out"
            ],
            "links_in": [
                PageLink(path=x["other_path"], link_type=x["link_type"], exists=True)
                for x in links
                if x["direction"] == "in"
            ],
        }
    )


def diff(db: TenantTransactions, caller: Caller, build_id: UUID, from_build_id: UUID | None) -> BuildDiff:
    """Pages compared by path and content hash; ``from`` defaults to the previous succeeded build of the source."""
    a = caller.account_id
    with db.tenant(a) as conn:
        build = _build(conn, a, build_id)
        if from_build_id is not None:
            other = _build(conn, a, from_build_id)
            if other["source_id"] != build["source_id"]:
                raise Conflict(
                    "from must be a build of the same source", extra={"reason": "different_source"}
                )
        else:
            prev = repo.latest_succeeded(conn, account_id=a, source_id=build["source_id"], before=build_id)
            from_build_id = prev["id"] if prev else None
        now = repo.page_hashes(conn, account_id=a, build_id=build_id)
        then = repo.page_hashes(conn, account_id=a, build_id=from_build_id) if from_build_id else {}
    return BuildDiff(
        build_id=build_id,
        from_build_id=from_build_id,
        added=[DiffEntry(path=p, from_hash=None, to_hash=now[p]) for p in sorted(now) if p not in then],
        removed=[DiffEntry(path=p, from_hash=then[p], to_hash=None) for p in sorted(then) if p not in now],
        changed=[
            DiffEntry(path=p, from_hash=then[p], to_hash=now[p])
            for p in sorted(now)
            if p in then and then[p] != now[p]
        ],
        unchanged=sum(1 for p in now if then.get(p) == now[p]),
    )


def events(db: TenantTransactions, caller: Caller, build_id: UUID, page: PageParams) -> Page[BuildEvent]:
    a = caller.account_id
    with db.tenant(a) as conn:
        _build(conn, a, build_id)
        rows, total = repo.events(conn, account_id=a, build_id=build_id, limit=page.limit, offset=page.offset)
    return Page(
        items=[BuildEvent.model_validate(r) for r in rows], total=total, limit=page.limit, offset=page.offset
    )


def activate(
    db: TenantTransactions, caller: Caller, build_id: UUID, rt: Retrieval | None = None
) -> ActivateResult:
    """Point the source's wiki at a succeeded, check-passed build (also the rollback), then bring the wiki index
    onto it (``reindex``): inline with ``rt`` for a small build, else as a ``wiki_index`` job queued in the same
    transaction as the activation."""
    a = caller.account_id
    with db.tenant(a) as conn:
        build = repo.build_row(conn, account_id=a, build_id=build_id)
        if build is None:
            raise NotFound("build")
        if build["status"] != "succeeded" or build["check_status"] != "passed":
            raise Conflict(
                f"build {build_id} cannot be activated: status {build['status']}, check "
                f"{build['check_status']} (only a succeeded build that passed check can serve)",
                extra={
                    "reason": "not_activatable",
                    "build_status": build["status"],  # status: the HTTP one
                    "check_status": build["check_status"],
                },
            )
        src = repo.source(conn, account_id=a, source_id=build["source_id"], lock=True)
        assert src is not None
        previous = src["active_build_id"]
        if previous != build_id:
            repo.set_active_build(conn, account_id=a, source_id=build["source_id"], build_id=build_id)
        review_job = enqueue_review(conn, account_id=a, build_id=build_id)  # issue 15: once per build
        inline = (
            rt is not None
            and repo.page_count(conn, account_id=a, build_id=build_id) <= reindex.MAX_INLINE_PAGES
        )
        index_job = None if inline else reindex.enqueue(conn, account_id=a, source_id=build["source_id"])
    if review_job is not None:
        jobs.wake(review_job)
    outcome = None
    if inline:
        assert rt is not None
        outcome, index_job = _index_inline(db, rt, a, build["source_id"])
    if index_job is not None:
        jobs.wake(index_job.id)
    return ActivateResult(
        source_id=build["source_id"],
        active_build_id=build_id,
        previous_build_id=previous,
        index=outcome,
        index_job=jobs.JobView.of(index_job) if index_job else None,
    )


def _index_inline(
    db: TenantTransactions, rt: Retrieval, account_id: UUID, source_id: UUID
) -> tuple[WikiIndexOutcome | None, jobs.Job | None]:
    """Index now; when that fails or leaves chunks out, the job does it again (with retries)."""
    from agentmate.knowledge.wiki.retrieval import sync_source

    try:
        outcome = sync_source(db, rt, account_id, source_id)
    except Exception:
        logger.exception("inline wiki index failed; queued as a job", extra={"source_id": str(source_id)})
        outcome = None
    else:
        if outcome is None or outcome.status == "indexed":
            return outcome, None
    with db.tenant(account_id) as conn:
        return outcome, reindex.enqueue(conn, account_id=account_id, source_id=source_id)
