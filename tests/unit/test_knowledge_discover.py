"""K4 scoring, classification and the fingerprint, as pure functions over catalog cards (prior-art §4.10)."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import replace

import pytest

from agentmate.core.errors import NotImplementedYet, ValidationFailed
from agentmate.knowledge.discovery import discover
from agentmate.knowledge.discovery.discover import Card
from agentmate.knowledge.readmodels.skill_contracts import SkillContract
from agentmate.skills.compile import knowledge_contract as kc


def card(
    name: str, *, caps=(), langs=(), domain=None, source_id=None, package_hash=None, source_name=None
) -> Card:
    sid = source_id or uuid.uuid4()
    return Card(
        source_id=sid,
        source_name=source_name or name.lower().replace(" ", "-"),
        name=name,
        description=None,
        domain=domain,
        revision_id=uuid.uuid4(),
        package_hash=package_hash or hashlib.sha256(name.encode()).hexdigest(),
        capabilities=tuple(caps),
        languages=tuple(langs),
    )


def contract(*requirements: dict, mode: str = "discover", **extra) -> SkillContract:
    parsed = kc.parse({"mode": mode, "requirements": list(requirements), **extra})
    return SkillContract(
        skill_version_id=uuid.uuid4(),
        skill_name="s",
        version="1",
        contract=parsed,
        identity=kc.identity(parsed),
    )


def req(rid: str = "docs", **kw) -> dict:
    return {"id": rid, "purpose": "p", **kw}


def one(result):
    (only,) = result.requirements
    return only


def test_a_card_must_overlap_every_declared_group_and_scores_overlaps_plus_one_for_the_domain():
    match = {"capabilities": ["billing", "refunds"], "languages": ["en"], "domains": ["product"]}
    full = card("Full", caps=["Billing", "refunds"], langs=["en"], domain="product")
    no_lang = card("No lang", caps=["billing"], langs=["zh"], domain="product")
    other_domain = card("Other", caps=["billing"], langs=["en"], domain="platform")
    points, matched = discover.score(match, full)
    # Given 2 capabilities + 1 language + the domain overlap, Then the score is 4 with the terms spelled out
    assert points == 4
    assert (matched.capabilities, matched.languages, matched.domain) == (
        ["billing", "refunds"],
        ["en"],
        "product",
    )
    assert discover.score(match, no_lang) is None
    assert discover.score(match, other_domain) is None


def test_candidates_sort_by_score_then_name_case_insensitively_then_source_id():
    match = {"capabilities": ["a", "b"], "languages": [], "domains": []}
    low, high = uuid.UUID(int=1), uuid.UUID(int=2)
    cards = [
        card("beta", caps=["a"]),
        card("Alpha", caps=["a"]),
        card("zeta", caps=["a", "b"]),
        card("same", caps=["a"], source_id=high),
        card("Same", caps=["a"], source_id=low),
    ]
    ranked = discover.rank(match, cards)
    assert [(c.rank, c.name, c.score) for c in ranked] == [
        (1, "zeta", 2),
        (2, "Alpha", 1),
        (3, "beta", 1),
        (4, "Same", 1),
        (5, "same", 1),
    ]
    assert [c.source_id for c in ranked[3:]] == [low, high]


def test_matched_when_candidates_fit_within_max_knowledge_bases_with_budgets_echoed():
    c = contract(
        req(match={"capabilities": ["billing"]}, retrieval={"max_knowledge_bases": 2, "top_k_per_base": 5})
    )
    r = one(discover.resolve(c, [card("FAQ", caps=["billing"]), card("Ops", caps=["ops"])], None))
    assert (r.status, r.candidates_total, [x.name for x in r.candidates], r.guidance) == (
        "matched",
        1,
        ["FAQ"],
        None,
    )
    assert (
        r.retrieval.max_knowledge_bases,
        r.retrieval.top_k_per_base,
        r.retrieval.freshness,
        r.retrieval.citations,
    ) == (2, 5, "active", "required")


def test_ambiguous_when_more_candidates_than_max_knowledge_bases_carries_on_ambiguous():
    c = contract(
        req(
            match={"capabilities": ["billing"]},
            retrieval={"max_knowledge_bases": 1},
            fallback={"on_ambiguous": "ask_user"},
        )
    )
    r = one(discover.resolve(c, [card("A", caps=["billing"]), card("B", caps=["billing"])], None))
    assert (r.status, r.guidance, r.candidates_total) == ("ambiguous", "ask_user", 2)
    assert "max_knowledge_bases=1" in r.note


def test_no_metadata_match_says_nothing_fits_when_manifests_declare_capabilities():
    c = contract(req(match={"capabilities": ["billing"]}))
    r = one(discover.resolve(c, [card("Ops", caps=["ops"])], None))
    assert (r.status, r.undeclared, r.candidates, r.guidance) == (
        "no_metadata_match",
        [],
        [],
        "proceed_without_knowledge",
    )
    assert r.note.startswith("nothing fits")


def test_no_metadata_match_says_no_manifest_declares_capabilities_at_all():
    c = contract(req(match={"capabilities": ["billing"], "languages": ["en"]}, required=True))
    r = one(discover.resolve(c, [card("Bare", langs=["en"]), card("Bare 2")], None))
    assert (r.status, r.undeclared, r.guidance) == ("no_metadata_match", ["capabilities"], "ask_user")
    assert "declares capabilities at all" in r.note


def test_no_authorized_knowledge_when_the_catalog_is_empty():
    r = one(discover.resolve(contract(req(match={"capabilities": ["billing"]})), [], None))
    assert (r.status, r.candidates, r.candidates_total) == ("no_authorized_knowledge", [], 0)


def test_pinned_resolved_and_pinned_missing_by_id_and_by_name():
    faq = card("FAQ", source_name="product-faq")
    ok = contract(
        req(pinned=[{"source_id": str(faq.source_id)}, {"source_name": "product-faq"}]), mode="pinned"
    )
    r = one(discover.resolve(ok, [faq], None))
    assert (r.status, [p.resolved for p in r.pins], [c.source_id for c in r.candidates]) == (
        "pinned_resolved",
        [True, True],
        [faq.source_id],
    )
    missing = contract(
        req(pinned=[{"source_name": "product-faq"}, {"source_name": "gone", "build_id": "b1"}]), mode="pinned"
    )
    r = one(discover.resolve(missing, [faq], None))
    assert (r.status, [p.resolved for p in r.pins], r.guidance) == (
        "pinned_missing",
        [True, False],
        "proceed_without_knowledge",
    )
    assert "'gone'" in r.pins[1].note
    wrong_pair = contract(
        req(pinned=[{"source_id": str(faq.source_id), "source_name": "other"}]), mode="pinned"
    )
    assert one(discover.resolve(wrong_pair, [faq], None)).status == "pinned_missing"


def test_a_pinned_build_must_be_a_usable_build_of_the_pinned_source():
    from agentmate.knowledge.readmodels.wiki_builds import Build

    faq, ops = card("FAQ", source_name="product-faq"), card("Ops")
    good, failed, elsewhere = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    builds = {
        good: Build(good, faq.source_id, faq.revision_id, "succeeded", "passed"),
        failed: Build(failed, faq.source_id, faq.revision_id, "failed", "failed"),
        elsewhere: Build(elsewhere, ops.source_id, ops.revision_id, "succeeded", "passed"),
    }
    pins = [
        {"source_name": "product-faq", "build_id": str(b)} for b in (good, failed, elsewhere, uuid.uuid4())
    ]
    c = contract(req(pinned=[*pins, {"source_name": "product-faq", "build_id": "b1"}]), mode="pinned")
    assert discover.pinned_build_ids(c) == {good, failed, elsewhere, uuid.UUID(pins[3]["build_id"])}
    r = one(discover.resolve(c, [faq, ops], None, builds))
    assert r.status == "pinned_missing"
    assert [p.resolved for p in r.pins] == [True, False, False, False, False]
    assert r.pins[0].resolved_build_id == good and r.pins[1].resolved_build_id is None
    assert [c.source_id for c in r.candidates] == [faq.source_id]
    for pin, words in zip(
        r.pins[1:],
        (
            "is failed with check failed",
            "another knowledge source",
            "no wiki build with id",
            "not a wiki build id",
        ),
        strict=True,
    ):
        assert words in pin.note, pin.note
    # without the account's builds (none looked up), a pinned build never resolves
    assert (
        one(discover.resolve(contract(req(pinned=pins[:1]), mode="pinned"), [faq], None)).status
        == "pinned_missing"
    )


def test_scoped_discover_is_not_implemented():
    c = contract(req(match={"capabilities": ["x"]}), mode="scoped_discover", scope={"tags": ["t"]})
    with pytest.raises(NotImplementedYet):
        discover.resolve(c, [], None)


def test_requirement_filter_resolves_one_requirement_and_an_unknown_id_lists_the_allowed_ones():
    c = contract(req("a", match={"capabilities": ["x"]}), req("b", match={"capabilities": ["y"]}))
    assert [r.requirement_id for r in discover.resolve(c, [], "B").requirements] == ["b"]
    with pytest.raises(ValidationFailed) as err:
        discover.resolve(c, [], "zzz")
    assert (err.value.errors[0].field, err.value.errors[0].allowed) == ("requirement_id", ["a", "b"])


def test_the_fingerprint_is_the_documented_sha256_and_deterministic():
    c = contract(req(match={"capabilities": ["billing"]}))
    cards = [card("A", caps=["billing"]), card("B")]
    text = f"v1|{c.identity}|filter=docs|catalog=" + ",".join(
        sorted(f"{x.source_id}@{x.package_hash}" for x in cards)
    )
    first = discover.resolve(c, cards, "Docs").discovery_fingerprint
    # Same input in another order → same fingerprint, and it is exactly the documented hash
    assert first == discover.resolve(c, cards[::-1], "docs").discovery_fingerprint
    assert first == hashlib.sha256(text.encode()).hexdigest()
    # A changed card (new package hash), another filter, another contract → another fingerprint
    changed = [replace(cards[0], package_hash="0" * 64), cards[1]]
    assert discover.resolve(c, changed, "docs").discovery_fingerprint != first
    assert discover.resolve(c, cards, None).discovery_fingerprint != first
    other = contract(req(match={"capabilities": ["refunds"]}))
    assert discover.resolve(other, cards, "docs").discovery_fingerprint != first


def test_candidates_are_capped_but_counted():
    c = contract(req(match={"capabilities": ["x"]}))
    r = one(discover.resolve(c, [card(f"c{i:03}", caps=["x"]) for i in range(60)], None))
    assert (r.status, len(r.candidates), r.candidates_total) == ("ambiguous", discover.MAX_CANDIDATES, 60)
