"""Validation signals and their attribution (spec/001 K3.9, prior-art §4.10): pure rules, no I/O.

An agent reports what happened after it used an answer; the platform places the fault on one of four layers
(wiki_synthesis, retrieval_miss, source_gap, skill_approach) or records it as ``unattributed``. Attribution runs on
recorded evidence only, and every branch that cannot separate the candidates answers ``unattributed``: a wrong cause
sends someone to fix the wrong layer, and then the real fix looks like it failed. ``skill_approach`` is never the
cause of one signal: it can only be suspected from the aggregate (the skill-patterns view), because one page
failing points at the page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Direction = Literal["positive", "negative"]
Origin = Literal["reported", "derived"]
Cause = Literal["unattributed", "wiki_synthesis", "retrieval_miss", "source_gap", "skill_approach"]
CAUSES: tuple[Cause, ...] = (
    "unattributed",
    "wiki_synthesis",
    "retrieval_miss",
    "source_gap",
    "skill_approach",
)

# The closed vocabulary, and its direction: direction is a property of the signal, never the caller's to declare.
SIGNAL_DIRECTIONS: dict[str, Direction] = {
    "answer_adopted": "positive",
    "citation_verified": "positive",
    "reused_for_similar": "positive",
    "question_repeated": "negative",
    "query_rephrased": "negative",
    "citation_abandoned": "negative",
    "answer_rewritten": "negative",
    "never_retrieved": "negative",
}
# Derived by the sweep from recorded searches and resolutions, never reported: accepting one from a caller would
# put reporting bias into the only series that has none.
DERIVED_SIGNALS: frozenset[str] = frozenset({"never_retrieved"})
REPORTABLE_SIGNALS: tuple[str, ...] = tuple(sorted(s for s in SIGNAL_DIRECTIONS if s not in DERIVED_SIGNALS))
_RECURRING = frozenset({"question_repeated", "query_rephrased", "answer_rewritten"})

# Namespaces of the two searchable layers (retrieval_documents.namespace of kindex and the wiki).
RAW_NAMESPACE = "knowledge"
WIKI_NAMESPACE = "knowledge_wiki"


@dataclass(frozen=True, slots=True)
class LoggedSearch:
    """One recorded search (a retrieval_queries row): its layer and how many hits it served."""

    namespace: str
    hit_count: int


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the platform recorded about the search a signal follows.

    ``None`` means that layer was not searched with this question, which is not the same as "it returned nothing":
    an unsearched layer proves nothing about a source gap.
    """

    query_known: bool = False
    wiki_hits: int | None = None
    raw_candidates: int | None = None


NO_QUERY = Evidence()


def evidence_from(reported: LoggedSearch | None, same_question: list[LoggedSearch]) -> Evidence:
    """Evidence from the reported search plus the account's other searches of the same question: a wiki miss can
    only be told from a source gap by looking at what the raw layer answered, and back. Several searches of one
    layer count with the best answer that layer gave."""
    if reported is None:
        return NO_QUERY
    wiki: int | None = None
    raw: int | None = None
    for search in [reported, *same_question]:
        if search.namespace == WIKI_NAMESPACE:
            wiki = max(wiki or 0, search.hit_count)
        elif search.namespace == RAW_NAMESPACE:
            raw = max(raw or 0, search.hit_count)
    return Evidence(query_known=True, wiki_hits=wiki, raw_candidates=raw)


@dataclass(frozen=True, slots=True)
class Attribution:
    cause: Cause
    basis: str  # which rule fired, in words: an attribution nobody can audit is no better than none


def attribute(signal: str, page_path: str | None, evidence: Evidence) -> Attribution:
    """The rules of prior-art §4.10, in order; anything they do not establish stays unattributed."""
    if SIGNAL_DIRECTIONS.get(signal) == "positive":
        return Attribution("unattributed", "positive signals name no fault to attribute")
    if signal == "never_retrieved":
        return Attribution(
            "unattributed", "a source nobody retrieved carries no evidence about which layer failed"
        )
    if signal == "citation_abandoned":
        if page_path:
            return Attribution(
                "wiki_synthesis",
                "a citation of the named page was opened and abandoned: the page "
                "led to source text that did not settle its claim",
            )
        return Attribution("unattributed", "citation_abandoned without a page_path cannot be placed")
    if signal in _RECURRING:
        return _recurring(page_path, evidence)
    return Attribution("unattributed", "no attribution rule matches this signal")


def _recurring(page_path: str | None, ev: Evidence) -> Attribution:
    if not ev.query_known:
        return Attribution(
            "unattributed",
            "no query_id was reported, so nothing separates a retrieval miss "
            "from a synthesis error or a source gap",
        )
    if ev.wiki_hits == 0 and ev.raw_candidates == 0:
        return Attribution(
            "source_gap", "neither the wiki nor the raw documents returned anything for this query"
        )
    if ev.wiki_hits == 0 and ev.raw_candidates is not None and ev.raw_candidates > 0:
        return Attribution("retrieval_miss", "the raw documents had candidates but no wiki page was returned")
    if page_path and ev.wiki_hits is not None and ev.wiki_hits > 0:
        return Attribution(
            "wiki_synthesis",
            "a wiki page was returned for this query, the signal names it, and the question recurred",
        )
    if ev.wiki_hits is None:
        return Attribution(
            "unattributed",
            "the wiki was not searched with this question, so a wiki miss cannot be told from a source gap",
        )
    if ev.raw_candidates is None and ev.wiki_hits == 0:
        return Attribution(
            "unattributed",
            "the wiki returned nothing and the raw documents were not searched "
            "with this question, so a retrieval miss cannot be told from a "
            "source gap",
        )
    return Attribution(
        "unattributed",
        "a wiki page was returned but the signal does not name it, so the fault cannot be placed",
    )


def interpret_skill_pattern(distinct_sources: int, distinct_pages: int) -> str:
    """What a skill version's negatives support, and no more: where to look, never a verdict."""
    if distinct_sources >= 2:
        return (
            "negatives span more than one knowledge source, so no page is the common factor; this is where "
            "to look for a skill_approach problem, not proof of one"
        )
    if distinct_pages >= 3:
        return (
            "negatives span several pages of one source; the source or the skill's use of it is a better "
            "suspect than any single page"
        )
    return "too few pages and sources to separate a skill problem from a page problem"


SKILL_PATTERNS_NOTE = (
    "this view says where to look, not what is wrong: skill_approach cannot be established from "
    "signal counts, only suspected from negatives that span pages and sources"
)
