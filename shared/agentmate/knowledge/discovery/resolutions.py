"""K4 resolution runs: what one execution of a skill resolved for one requirement, frozen as an append-only row.

The trust boundary is per field (spec/001):

- **server-filled**: ``contract_identity`` comes from the skill version's compiled contract (the read model), and
  ``requirement_id`` must name one of that contract's requirements;
- **verified**: every ``selected`` base is a knowledge source of this account, its ``revision_id`` one of that
  source's revisions, and its optional ``build_id`` a usable wiki build (succeeded, passed check) of that source
  in this account; with a build the revision defaults to the one the build compiled (and a revision given must be
  it), without one to the source's active revision;
- **client-reported echoes**: ``candidates``, ``retrieved`` and ``citations`` are bounded references (no
  bodies: at most 256 entries each, 256 KiB together), tied to a served discovery by ``discovery_fingerprint``;
  ``fingerprint_current`` records whether that fingerprint is the one discovery serves for this contract and
  catalog at record time (a catalog that changed since is worth knowing, not a reason to lose the run).

``selected`` may be empty: "discovery found nothing and the skill proceeded per its fallback" is exactly the run
worth recording. An idempotency key (body ``idempotency_key`` or the ``Idempotency-Key`` header) makes the
record retry-safe: an identical replay returns the original run, a disagreeing one is a 409.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

from agentmate.core import idempotency
from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import ErrorCollector, NotFound, TooLarge, invalid
from agentmate.core.observability import counted, new_only
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal
from agentmate.core.results import Created
from agentmate.knowledge.discovery import discover
from agentmate.knowledge.discovery import repository as repo
from agentmate.knowledge.discovery.repository import SelectedRow
from agentmate.knowledge.discovery.schemas import (
    MAX_EVIDENCE_BYTES,
    ResolutionCreate,
    ResolutionRun,
    ResolutionSummary,
)
from agentmate.knowledge.readmodels import wiki_builds
from agentmate.knowledge.readmodels.skill_contracts import compiled_contract

ROUTE = "knowledge.resolutions.create"


def _key(body: ResolutionCreate, header: str | None) -> str | None:
    if header is not None and body.idempotency_key is not None and header != body.idempotency_key:
        raise invalid("idempotency_key", "differs from the Idempotency-Key header; send one of them")
    return body.idempotency_key or header


def _selected(conn: Conn, account_id: UUID, body: ResolutionCreate) -> list[SelectedRow]:
    """The selections verified against the account, with each one's revision filled in."""
    errors = ErrorCollector()
    ids = [s.source_id for s in body.selected]
    found = repo.sources(conn, account_id=account_id, source_ids=ids) if ids else {}
    pairs = [(s.source_id, s.revision_id) for s in body.selected if s.revision_id is not None]
    revisions = repo.revisions_of(conn, account_id=account_id, pairs=pairs)
    builds = wiki_builds.builds(
        conn, account_id=account_id, build_ids=[s.build_id for s in body.selected if s.build_id is not None]
    )
    out: list[SelectedRow] = []
    for i, sel in enumerate(body.selected):
        at = f"selected[{i}]"
        source = found.get(sel.source_id)
        if ids.index(sel.source_id) != i:
            errors.add(f"{at}.source_id", f"names the same source as selected[{ids.index(sel.source_id)}]")
            continue
        if source is None:
            errors.add(f"{at}.source_id", "unknown knowledge source in this account")
            continue
        build = builds.get(sel.build_id) if sel.build_id is not None else None
        if sel.build_id is not None:
            if build is None:
                errors.add(f"{at}.build_id", "unknown wiki build in this account")
            elif build.source_id != sel.source_id:
                errors.add(
                    f"{at}.build_id", "is a wiki build of another knowledge source, not of this source_id"
                )
            elif not build.usable:
                errors.add(f"{at}.build_id", build.unusable_reason())
            elif sel.revision_id is not None and sel.revision_id != build.source_revision_id:
                errors.add(
                    f"{at}.build_id",
                    f"compiled revision {build.source_revision_id}, not this "
                    "revision_id: name that revision, or omit revision_id",
                )
        revision = sel.revision_id or (
            build.source_revision_id
            if build is not None and build.source_id == sel.source_id
            else source["active_revision_id"]
        )
        if sel.revision_id is not None and (sel.source_id, sel.revision_id) not in revisions:
            errors.add(f"{at}.revision_id", "not a revision of this source in this account")
        elif revision is None:
            errors.add(f"{at}.revision_id", "the source has no active revision: name the revision used")
        out.append(
            {
                "source_id": str(sel.source_id),
                "source_name": source["name"],
                "revision_id": str(revision) if revision else None,
                "build_id": str(sel.build_id) if build is not None else None,
            }
        )
    errors.raise_if_any()
    return out


def _evidence(body: ResolutionCreate) -> dict[str, list[dict[str, Any]]]:
    data = {
        k: [e.model_dump(mode="json", exclude_none=True) for e in getattr(body, k)]
        for k in ("candidates", "retrieved", "citations")
    }
    size = sum(len(json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode()) for v in data.values())
    if size > MAX_EVIDENCE_BYTES:
        raise TooLarge(
            f"candidates, retrieved and citations take {size} bytes together, more than "
            f"{MAX_EVIDENCE_BYTES}: keep references (ids, paths, scores), never bodies"
        )
    return data


def _fingerprint_current(
    conn: Conn, account_id: UUID, identity: str, requirement_id: str, echoed: str
) -> bool:
    cards = discover.catalog_cards(conn, account_id=account_id)
    return echoed in (
        discover.fingerprint(identity, requirement_id, cards),
        discover.fingerprint(identity, None, cards),
    )


@counted("KnowledgeResolutionRecorded", new_only)
def record(
    db: TenantTransactions, principal: Principal, body: ResolutionCreate, header_key: str | None = None
) -> Created[ResolutionRun]:
    key = _key(body, header_key)
    request = body.model_dump(mode="json", exclude={"idempotency_key"})
    account = principal.account_id
    with db.tenant(account) as conn:

        def insert() -> ResolutionRun:
            contract = compiled_contract(conn, account_id=account, version_id=body.skill_version_id)
            req = contract.requirement(body.requirement_id)
            if req is None:
                raise invalid(
                    "requirement_id",
                    "is not a requirement of this skill version's knowledge contract",
                    contract.requirement_ids,
                )
            selected = _selected(conn, account, body)
            evidence = _evidence(body)
            run = repo.insert_run(
                conn,
                account_id=account,
                user_id=principal.user_id,
                key_id=principal.key_id,
                data={
                    "skill_version_id": body.skill_version_id,
                    "session_id": body.session_id,
                    "requirement_id": req["id"],
                    "contract_identity": contract.identity,
                    "discovery_fingerprint": body.discovery_fingerprint,
                    "discovery_status": body.discovery_status,
                    "fingerprint_current": _fingerprint_current(
                        conn, account, contract.identity, req["id"], body.discovery_fingerprint
                    ),
                    "selected": selected,
                    "candidates": evidence["candidates"],
                    "retrieved": evidence["retrieved"],
                    "citations": evidence["citations"],
                    "selection_reason": body.selection_reason,
                    "confidence": body.confidence,
                    "idempotency_key": key,
                    "content_hash": idempotency.canonical_hash(request),
                },
            )
            return run

        return idempotency.once(
            conn,
            account_id=account,
            route=ROUTE,
            key=key,
            request=request,
            model=ResolutionRun,
            create=insert,
        )


def list_runs(
    db: TenantTransactions,
    principal: Principal,
    page: PageParams,
    *,
    skill_version_id: UUID | None = None,
    session_id: str | None = None,
    source_id: UUID | None = None,
) -> Page[ResolutionSummary]:
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.list_runs(
            conn,
            account_id=principal.account_id,
            skill_version_id=skill_version_id,
            session_id=session_id,
            source_id=source_id,
            limit=page.limit,
            offset=page.offset,
        )
    return Page[ResolutionSummary](
        items=rows,
        total=total,
        limit=page.limit,
        offset=page.offset,
    )


def get_run(db: TenantTransactions, principal: Principal, run_id: UUID) -> ResolutionRun:
    with db.tenant(principal.account_id) as conn:
        run = repo.get_run(conn, account_id=principal.account_id, run_id=run_id)
    if run is None:
        raise NotFound("knowledge resolution run")
    return run
