# ruff: noqa: RUF001  (CJK punctuation is part of the test text)
"""The ranked lexical leg (migrations/0084) against real Postgres: any query term may match, rare terms weigh more
than common ones, stop words decide nothing, English inflections meet, exact words, numbers, identifiers and CJK
bigrams still match, the candidate pool is filled rarest term first, a stop-word-only query keeps the every-word
match, statistics never cross accounts, and no token can break the query."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmate.core.db import get_database
from agentmate.retrieval import lexical, service
from agentmate.retrieval import repository as repo
from agentmate.retrieval.service import Retrieval

NS = "bm25docs"


@pytest.fixture
def retrieval(make_retrieval: Any) -> Retrieval:
    return make_retrieval()


def _doc(source_id: str, content: str) -> service.DocumentIn:
    return service.DocumentIn(
        namespace=NS, source_type="note", source_id=source_id, title="", content=content
    )


def _lexical(acc: UUID, query: str, *, limit: int = 20, pool: int | None = None) -> list[str]:
    with get_database().tenant(acc) as conn:
        rows = repo.lexical_search(
            conn,
            account_id=acc,
            namespace=NS,
            tokens=lexical.search_tokens(query),
            fallback_tsquery=lexical.tsquery(query),
            limit=limit,
            pool=pool,
        )
    return [r["source_id"] for r in rows]


def _insert_indexed(owner_url: str, acc: UUID, rows: list[tuple[str, str]]) -> None:
    """Indexed rows written directly (the lexical leg needs no vectors): (source_id, content)."""
    with psycopg.connect(owner_url, autocommit=True) as owner, owner.cursor() as cur:
        cur.executemany(
            """INSERT INTO retrieval_documents (account_id, namespace, source_type, source_id, content_hash, content,
                   lexical_text, status)
               VALUES (%s, %s, 'note', %s, md5(%s), %s, %s, 'indexed')""",
            [(acc, NS, sid, sid, text, lexical.projection("", text)) for sid, text in rows],
        )


def test_a_natural_language_question_matches_on_its_content_words(account, retrieval):
    db, acc = get_database(), UUID(account.account_id)
    retrieval.index_documents(
        db,
        acc,
        [
            _doc("group", "Caroline: I went to an LGBTQ support group yesterday and it was powerful."),
            _doc("beach", "Melanie: We took the kids to the beach last weekend."),
        ],
    )
    # Every word was required before, so "when", "did", "to" and "the" hid the only answer
    assert _lexical(acc, "When did Caroline go to the LGBTQ support group?")[0] == "group"


def test_inflections_meet_and_stop_words_decide_nothing(account, retrieval):
    db, acc = get_database(), UUID(account.account_id)
    retrieval.index_documents(
        db,
        acc,
        [
            _doc("deploys", "The pipeline deploys the billing service every Tuesday."),
            _doc("the", "the of and to in is it that was for on are with as"),
        ],
    )
    assert _lexical(acc, "deploying billing") == ["deploys"]
    assert _lexical(acc, "the deployment of the services") == ["deploys"]


def test_rare_terms_outweigh_common_ones(account, owner_url):
    acc = UUID(account.account_id)
    # "meeting" is in every row; "zanzibar" in one row, which also lacks "meeting"
    rows = [(f"m{i:03d}", f"Notes from the weekly meeting number {i}.") for i in range(60)]
    rows.append(("rare", "We booked the flights to Zanzibar."))
    _insert_indexed(owner_url, acc, rows)
    ranked = _lexical(acc, "meeting about zanzibar")
    assert ranked[0] == "rare"
    assert len(ranked) == 20  # the common term still ranks the rest


def test_the_pool_is_filled_rarest_term_first(account, owner_url):
    acc = UUID(account.account_id)
    # 300 rows with a common word, inserted before the one row that also has the rare word
    rows = [(f"c{i:03d}", f"status update {i} for the release") for i in range(300)]
    rows.append(("both", "status update for the release of kestrel"))
    _insert_indexed(owner_url, acc, rows)
    # A pool of 20 could never reach the 301st row of the common word in scan order; rarity puts it first
    assert _lexical(acc, "release kestrel", limit=5, pool=20)[0] == "both"
    # With the rare word unknown here, the pool holds the first 20 matches of the common one: bounded, not empty
    assert len(_lexical(acc, "release unicorn", limit=50, pool=50)) == 50


def test_exact_words_numbers_identifiers_and_cjk_still_match(account, retrieval):
    db, acc = get_database(), UUID(account.account_id)
    retrieval.index_documents(
        db,
        acc,
        [
            _doc("ticket", "Ticket OPS-4471 was closed in release v2.13 on 2024-03-09."),
            _doc("tokyo", "我们下周去东京出差，住在新宿。"),
            _doc("other", "Nothing to see here."),
        ],
    )
    assert _lexical(acc, "what happened with OPS-4471")[0] == "ticket"
    assert _lexical(acc, "v2") == ["ticket"]
    assert _lexical(acc, "2024") == ["ticket"]
    assert _lexical(acc, "东京的酒店")[0] == "tokyo"


def test_a_query_of_stop_words_only_still_requires_every_word(account, retrieval):
    db, acc = get_database(), UUID(account.account_id)
    retrieval.index_documents(db, acc, [_doc("who", "The Who played here."), _doc("that", "That is all.")])
    assert _lexical(acc, "the who") == ["who"]
    assert _lexical(acc, "?!") == []


def test_statistics_and_matches_stay_in_the_account(account, other_account, owner_url):
    acc, other = UUID(account.account_id), UUID(other_account.account_id)
    _insert_indexed(owner_url, acc, [("mine-1", "otter habitat survey"), ("mine-2", "river survey")])
    # The other account makes "otter" common and "river" rare there; it must change nothing here
    _insert_indexed(owner_url, other, [(f"o{i}", "otter otter") for i in range(50)] + [("o-river", "river")])
    scores: dict[str, float] = {}
    with get_database().tenant(acc) as conn:
        for r in repo.lexical_search(
            conn, account_id=acc, namespace=NS, tokens=["otter", "river"], fallback_tsquery=None, limit=10
        ):
            scores[r["source_id"]] = r["lexical_score"]
    assert set(scores) == {"mine-1", "mine-2"}
    with get_database().tenant(other) as conn:
        theirs = repo.lexical_search(
            conn, account_id=other, namespace=NS, tokens=["otter", "river"], fallback_tsquery=None, limit=100
        )
    assert "mine-1" not in {r["source_id"] for r in theirs}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tokens=st.lists(st.text(min_size=1, max_size=40), max_size=80))
def test_no_token_list_breaks_the_query(account, tokens):
    # Tokens normally come from the projection (letters and digits); the function must not rely on it
    acc = UUID(account.account_id)
    with get_database().tenant(acc) as conn:
        rows = repo.lexical_search(
            conn,
            account_id=acc,
            namespace=NS,
            tokens=[t.replace("\x00", "") for t in tokens],
            fallback_tsquery=None,
            limit=5,
        )
    assert rows == []


def test_the_facts_term_rules_agree_with_the_index(account):
    # retrieval.bm25 (FACTS, in Python) must keep and stem terms as search_tsv does (Postgres' english configuration)
    from pathlib import Path

    from agentmate.retrieval import bm25

    text = (Path(__file__).resolve().parents[2] / "docs" / "agent-integration.md").read_text()[:20000]
    text += " 东京出差 v2 2024 abc123 café naïve running happiness agreed databases children"
    with get_database().tenant(UUID(account.account_id)) as conn:
        row = conn.execute("SELECT retrieval_search_terms(%s) AS t", (lexical.tokens(text),)).fetchone()
    assert row is not None
    assert bm25.terms(text) == row["t"]
