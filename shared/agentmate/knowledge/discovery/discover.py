"""K4 discovery: a skill version's compiled knowledge contract resolved against the account's K0 catalog.

Scoring and classification are pure functions over catalog cards (prior-art §4.10): a card is a candidate when it
overlaps every match group the requirement declares (capabilities AND languages AND domains, at least one term
each, compared case-insensitively); its score is the number of overlapping terms, +1 for the domain; candidates
sort by score descending, name (case-insensitive) ascending, source id ascending. Each requirement gets one
status — failure classes are never flattened into an empty list:

- ``matched``: 1..max_knowledge_bases candidates;
- ``ambiguous``: more than max_knowledge_bases, with the contract's on_ambiguous guidance;
- ``no_metadata_match``: the catalog has cards but none fits; the note says whether nothing fits or no manifest
  declares the requirement's match group (capabilities, ...) at all;
- ``no_authorized_knowledge``: the account has no card (no source with an active revision) to rank;
- ``pinned_resolved`` / ``pinned_missing``: pinned mode, every pin found / some pin not found. A pin resolves
  by ``source_id`` or ``source_name`` to a card; a pin that also names a ``build_id`` resolves only when that id
  is a wiki build of this account, of that source, and usable (succeeded and passed check: the builds a source
  can activate). Otherwise the pin is missing and its note says which of those failed.

``scoped_discover`` is refused (501): workspaces, tags and approved state do not exist in the knowledge domain,
and silently ignoring the scope would widen what the author narrowed.

The fingerprint is sha256 of ``v1|<contract identity>|filter=<lower requirement id>|catalog=<sorted
source_id@package_hash, comma-joined>``: the same contract against the same catalog state gives the same value,
and a resolution run records it as the discovery it followed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import NotImplementedYet, invalid
from agentmate.core.principal import Principal
from agentmate.knowledge.catalog.repository import ManifestCard
from agentmate.knowledge.catalog.service import fold_languages
from agentmate.knowledge.discovery import repository
from agentmate.knowledge.discovery.schemas import (
    Budgets,
    Candidate,
    DiscoverRequest,
    DiscoverResponse,
    Fallback,
    MatchEcho,
    MatchedTerms,
    PinResolution,
    RequirementDiscovery,
)
from agentmate.knowledge.readmodels import wiki_builds
from agentmate.knowledge.readmodels.skill_contracts import SkillContract, compiled_contract
from agentmate.knowledge.readmodels.wiki_builds import Build, as_build_id

FINGERPRINT_VERSION = "v1"
MAX_CANDIDATES = 50
GROUPS = ("capabilities", "languages", "domains")


@dataclass(frozen=True, slots=True)
class Card:
    """What discovery reads of one K0 catalog card (a source with an active revision)."""

    source_id: UUID
    source_name: str
    name: str
    description: str | None
    domain: str | None
    revision_id: UUID
    package_hash: str
    capabilities: tuple[str, ...]
    languages: tuple[str, ...]
    """The manifest's languages with the singular ``language`` folded in."""
    citation_policy: Literal["required", "optional"] | None = None

    @property
    def sort_key(self) -> tuple[str, str]:
        return (self.name.lower(), str(self.source_id))


def fingerprint(identity: str, requirement_id: str | None, cards: Sequence[Card]) -> str:
    catalog = ",".join(sorted(f"{c.source_id}@{c.package_hash}" for c in cards))
    text = (
        f"{FINGERPRINT_VERSION}|{identity}|filter={(requirement_id or '').strip().lower()}|catalog={catalog}"
    )
    return hashlib.sha256(text.encode()).hexdigest()


def score(match: dict[str, list[str]], card: Card) -> tuple[int, MatchedTerms] | None:
    """The card's score and matched terms, or None when it misses a declared match group."""
    found = _Wanted.of(match).score(_Facts.of(card))
    if found is None:
        return None
    return found[0], MatchedTerms(capabilities=found[1], languages=found[2], domain=found[3])


@dataclass(frozen=True, slots=True)
class _Facts:
    """A card's terms lowercased once per discovery (a discovery scores every card for every requirement)."""

    card: Card
    caps: frozenset[str]
    langs: frozenset[str]
    domain: str | None

    @classmethod
    def of(cls, card: Card) -> _Facts:
        return cls(
            card,
            frozenset(c.lower() for c in card.capabilities),
            frozenset(v.lower() for v in card.languages),
            card.domain.lower() if card.domain else None,
        )


@dataclass(frozen=True, slots=True)
class _Wanted:
    """A requirement's match groups as (spelling, lowercase) pairs, built once per requirement."""

    caps: tuple[tuple[str, str], ...]
    langs: tuple[tuple[str, str], ...]
    domains: dict[str, str]

    @classmethod
    def of(cls, match: dict[str, list[str]]) -> _Wanted:
        return cls(
            tuple((w, w.lower()) for w in match["capabilities"]),
            tuple((w, w.lower()) for w in match["languages"]),
            {d.lower(): d for d in reversed(match["domains"])},
        )

    def score(self, f: _Facts) -> tuple[int, list[str], list[str], str | None] | None:
        caps = [w for w, low in self.caps if low in f.caps]
        if self.caps and not caps:
            return None
        langs = [w for w, low in self.langs if low in f.langs]
        if self.langs and not langs:
            return None
        domain = self.domains.get(f.domain) if f.domain is not None else None
        if self.domains and domain is None:
            return None
        return len(caps) + len(langs) + (1 if domain else 0), caps, langs, domain


def _candidate(rank: int, card: Card, points: int, matched: MatchedTerms) -> Candidate:
    # model_construct: every value comes from a stored manifest and the contract, both validated on the way in
    return Candidate.model_construct(
        rank=rank,
        source_id=card.source_id,
        source_name=card.source_name,
        name=card.name,
        description=card.description,
        domain=card.domain,
        revision_id=card.revision_id,
        package_hash=card.package_hash,
        capabilities=list(card.capabilities),
        languages=list(card.languages),
        citation_policy=card.citation_policy,
        score=points,
        matched=matched,
    )


def _ranked(
    match: dict[str, list[str]], facts: Sequence[_Facts], limit: int = MAX_CANDIDATES
) -> tuple[list[Candidate], int]:
    """The first ``limit`` candidates (score desc, name case-insensitively, source id) as models, and how many
    there are in all (only those shown are built: a discovery may score hundreds of cards)."""
    wanted = _Wanted.of(match)
    scored = [(s, f.card) for f in facts if (s := wanted.score(f)) is not None]
    scored.sort(key=lambda t: (-t[0][0], *t[1].sort_key))
    top = [
        _candidate(i, c, s[0], MatchedTerms.model_construct(capabilities=s[1], languages=s[2], domain=s[3]))
        for i, (s, c) in enumerate(scored[:limit], start=1)
    ]
    return top, len(scored)


def rank(match: dict[str, list[str]], cards: Sequence[Card]) -> list[Candidate]:
    """Every candidate, ranked."""
    return _ranked(match, [_Facts.of(c) for c in cards], len(cards))[0]


def _undeclared(match: dict[str, list[str]], cards: Sequence[Card]) -> list[str]:
    declared = {
        "capabilities": any(c.capabilities for c in cards),
        "languages": any(c.languages for c in cards),
        "domains": any(c.domain for c in cards),
    }
    return [g for g in GROUPS if match[g] and not declared[g]]


def _build_problem(build: str, card: Card, builds: Mapping[UUID, Build]) -> str | None:
    """Why a pinned build does not resolve for this card, or None when it is a usable build of the card's source."""
    build_id = as_build_id(build)
    if build_id is None:
        return f"build_id {build!r} is not a wiki build id (a UUID)"
    found = builds.get(build_id)
    if found is None:
        return f"no wiki build with id {build_id} in this account"
    if found.source_id != card.source_id:
        return f"build {build_id} is a wiki build of another knowledge source, not of {card.source_name!r}"
    if not found.usable:
        return f"build {build_id} {found.unusable_reason()}"
    return None


def pinned_build_ids(contract: SkillContract) -> set[UUID]:
    """Every build id the contract's pins name (those that can be ids at all)."""
    return {
        b
        for r in contract.contract["requirements"]
        for p in r.get("pinned") or ()
        if (b := as_build_id(p.get("build_id"))) is not None
    }


def _pins(
    req: dict[str, Any], cards: Sequence[Card], builds: Mapping[UUID, Build]
) -> tuple[list[PinResolution], list[Candidate]]:
    by_id = {str(c.source_id): c for c in cards}
    by_name = {c.source_name: c for c in cards}
    pins: list[PinResolution] = []
    found: list[Candidate] = []
    for pin in req["pinned"]:
        sid, sname, build = (
            pin.get("source_id") or None,
            pin.get("source_name") or None,
            pin.get("build_id") or None,
        )
        card = by_id.get(sid.lower()) if sid else by_name.get(sname or "")
        note = ""
        if card is None:
            note = (
                f"no knowledge source with an active revision has {'id' if sid else 'name'} "
                f"{sid or sname!r} in this account"
            )
        elif sid and sname and card.source_name != sname:
            note = f"source_id {sid} is the source named {card.source_name!r}, not {sname!r}"
            card = None
        elif build and (problem := _build_problem(build, card, builds)) is not None:
            note, card = problem, None
        elif build:
            note = f"build {as_build_id(build)} is a usable wiki build of {card.source_name!r}"
        pins.append(
            PinResolution(
                source_id=sid,
                source_name=sname,
                build_id=build,
                resolved=card is not None,
                resolved_source_id=card.source_id if card else None,
                resolved_build_id=as_build_id(build) if card is not None and build else None,
                note=note,
            )
        )
        if card is not None and all(c.source_id != card.source_id for c in found):
            found.append(
                _candidate(len(found) + 1, card, 0, MatchedTerms(capabilities=[], languages=[], domain=None))
            )
    return pins, found


def classify(
    mode: str,
    req: dict[str, Any],
    cards: Sequence[Card],
    facts: Sequence[_Facts] | None = None,
    builds: Mapping[UUID, Build] | None = None,
) -> RequirementDiscovery:
    """One requirement's status, candidates and note (pure)."""
    ret, fb, match = req["retrieval"], req["fallback"], req["match"]
    limit = ret["max_knowledge_bases"]
    pins: list[PinResolution] = []
    undeclared: list[str] = []
    guidance: str | None = None
    total = 0
    if mode == "pinned":
        pins, candidates = _pins(req, cards, builds or {})
        total = len(candidates)
        missing = [p for p in pins if not p.resolved]
        status = "pinned_missing" if missing else "pinned_resolved"
        note = (
            (
                f"{len(missing)} of {len(pins)} pinned knowledge bases not found: "
                + "; ".join(p.note for p in missing)
            )
            if missing
            else f"all {len(pins)} pinned knowledge bases found"
        )
        guidance = fb["on_no_match"] if missing else None
    elif not cards:
        candidates = []
        status = "no_authorized_knowledge"
        note = (
            "this account has no knowledge source with an active revision to discover against: register a "
            "source and sync or push a package (POST /api/knowledge/sources)"
        )
        guidance = fb["on_no_match"]
    else:
        candidates, total = _ranked(match, facts if facts is not None else [_Facts.of(c) for c in cards])
        if not candidates:
            status = "no_metadata_match"
            undeclared = _undeclared(match, cards)
            if undeclared:
                note = (
                    f"no manifest in this account declares {' or '.join(undeclared)} at all, so this "
                    f"requirement cannot match any of the {len(cards)} collections: declare them in "
                    "KNOWLEDGE.yaml"
                )
            else:
                note = (
                    f"nothing fits: none of the {len(cards)} collections overlaps every match group this "
                    "requirement declares"
                )
            guidance = fb["on_no_match"]
        elif total > limit:
            status = "ambiguous"
            note = (
                f"{total} collections fit, more than max_knowledge_bases={limit}; the contract "
                f"says on_ambiguous={fb['on_ambiguous']}"
            )
            guidance = fb["on_ambiguous"]
        else:
            status = "matched"
            note = f"{total} collection{'s' if total != 1 else ''} fit"
    return RequirementDiscovery(
        requirement_id=req["id"],
        purpose=req["purpose"],
        required=req["required"],
        status=status,  # type: ignore[arg-type]
        note=note,
        guidance=guidance,
        undeclared=undeclared,  # type: ignore[arg-type]
        match=MatchEcho(**match),
        retrieval=Budgets(**ret),
        fallback=Fallback(**fb),
        candidates=candidates[:MAX_CANDIDATES],
        candidates_total=total,
        pins=pins,
    )


def resolve(
    contract: SkillContract,
    cards: Sequence[Card],
    requirement_id: str | None,
    builds: Mapping[UUID, Build] | None = None,
) -> DiscoverResponse:
    """The whole discovery of one contract against one catalog state (pure); ``builds`` are the account's builds
    among those the contract's pins name."""
    mode = contract.contract["mode"]
    if mode == "scoped_discover":
        raise NotImplementedYet(
            "scoped_discover contracts are refused rather than silently widened: workspaces, "
            "tags and approved state do not exist in the knowledge domain yet"
        )
    reqs = contract.contract["requirements"]
    if requirement_id is not None:
        one = contract.requirement(requirement_id)
        if one is None:
            raise invalid(
                "requirement_id",
                "is not a requirement of this skill version's knowledge contract",
                contract.requirement_ids,
            )
        reqs = [one]
    facts = [_Facts.of(c) for c in cards]
    return DiscoverResponse(
        skill_version_id=contract.skill_version_id,
        skill_name=contract.skill_name,
        skill_version=contract.version,
        mode=mode,
        contract_identity=contract.identity,
        discovery_fingerprint=fingerprint(contract.identity, requirement_id, cards),
        catalog_size=len(cards),
        requirements=[classify(mode, r, cards, facts, builds) for r in reqs],
    )


# -- the catalog ---------------------------------------------------------------------------------------------------


def _cards(rows: list[ManifestCard]) -> list[Card]:
    out = []
    for r in rows:
        m = r["manifest"] or {}
        out.append(
            Card(
                source_id=r["source_id"],
                source_name=r["source_name"],
                name=m.get("name") or r["source_name"],
                description=m.get("description"),
                domain=r["domain"],
                revision_id=r["revision_id"],
                package_hash=r["package_hash"],
                capabilities=tuple(m.get("capabilities") or ()),
                languages=tuple(fold_languages(m)),
                citation_policy=m.get("citation_policy"),
            )
        )
    return out


def catalog_cards(conn: Conn, *, account_id: UUID) -> list[Card]:
    """Every K0 card of the account (the catalog's cards, language folded in), as discovery reads them."""
    return _cards(repository.card_rows(repository.discovery_cards(conn, account_id=account_id)))


def discover(db: TenantTransactions, principal: Principal, body: DiscoverRequest) -> DiscoverResponse:
    account = principal.account_id
    # Pipeline mode: the cards statement travels with the contract's, so both cost one round trip.
    with db.tenant(account, pipeline=True) as conn:
        cards_cursor = repository.discovery_cards(conn, account_id=account)
        contract = compiled_contract(conn, account_id=account, version_id=body.skill_version_id)
        if contract.contract["mode"] == "scoped_discover":
            return resolve(contract, [], body.requirement_id)  # raises: no catalog scored for a refused mode
        cards = _cards(repository.card_rows(cards_cursor))
        pinned = pinned_build_ids(contract) if contract.contract["mode"] == "pinned" else set()
        builds = wiki_builds.builds(conn, account_id=account, build_ids=pinned) if pinned else {}
    return resolve(contract, cards, body.requirement_id, builds)
