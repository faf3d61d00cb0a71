"""The nine wiki quality tools on /mcp/knowledge over real HTTP (official SDK client): round trips, scopes, and
another account's ids refused."""

from __future__ import annotations

from uuid import UUID

import anyio
import pytest

from agentmate.core.db import get_database
from agentmate.retrieval.service import record_query
from tests.integration.knowledge_quality.wikibuilds import PageSpec, actor_of, make_build, make_source, push

from .conftest import mcp_session
from .test_mcp_modules import call, refused

pytestmark = pytest.mark.anyio
PAGE = "wiki/refunds.md"


def _kb(account, name):
    actor = actor_of(account)
    source = make_source(actor, name)
    revision = push(actor, source, {"docs/refunds.md": "# Refunds\n\nRefunds take 30 days.\n"})
    build = make_build(
        actor,
        source,
        revision,
        [
            PageSpec("wiki/index.md", "index", links=[(PAGE, "references")]),
            PageSpec(PAGE, "summary", "# Refunds\n\nRefunds take 30 days.\n", cites=["docs/refunds.md"]),
        ],
    )
    a = UUID(account.account_id)
    with get_database().tenant(a) as conn:
        query_id = record_query(
            conn,
            a,
            user_id=None,
            key_id=None,
            namespace="knowledge_wiki",
            query="refunds",
            filters={},
            top_k=5,
            hits=[{"source_id": str(source)}],
            degraded=[],
        )
    return str(source), str(build), str(query_id)


async def test_the_quality_tools_round_trip_and_refuse_another_accounts_ids(base_url, account, other_account):
    source, build, query_id = _kb(account, "mcp-quality-kb")
    foreign_source, foreign_build, foreign_query = _kb(other_account, "mcp-quality-foreign")
    url = f"{base_url}/mcp/knowledge"
    with anyio.fail_after(30):
        async with mcp_session(url, {"X-Api-Key": account.key("knowledge:rw")}) as s:
            run = await call(s, "knowledge_wiki_lint", source_id=source)
            assert [f["rule"] for f in run["findings"]] == ["orphan_page"]
            runs = await call(s, "knowledge_wiki_lint_runs", source_id=source)
            assert [r["id"] for r in runs["items"]] == [run["run"]["id"]]
            assert (await call(s, "knowledge_wiki_lint_run_get", run_id=run["run"]["id"]))["run"] == run[
                "run"
            ]
            review = await call(s, "knowledge_build_review_get", build_id=build)
            assert review["review"] is None and "check is the only gate" in review["warning"]
            assert "no reviewer" in await refused(s, "knowledge_build_review", build_id=build)
            signal = await call(
                s,
                "knowledge_validation_report",
                source_id=source,
                signal="question_repeated",
                query_id=query_id,
                page_path=PAGE,
                idempotency_key="mcp-1",
            )
            assert signal["cause"] == "wiki_synthesis"
            again = await call(
                s,
                "knowledge_validation_report",
                source_id=source,
                signal="question_repeated",
                query_id=query_id,
                page_path=PAGE,
                idempotency_key="mcp-1",
            )
            assert again["id"] == signal["id"]
            listed = await call(s, "knowledge_validation_signals", source_id=source)
            assert [i["id"] for i in listed["items"]] == [signal["id"]]
            summary = await call(s, "knowledge_validation_summary", source_id=source)
            assert (summary["total"], summary["negative"]) == (1, 1)
            patterns = await call(s, "knowledge_validation_skill_patterns")
            assert patterns["items"] == []
            # Another account's ids are not found, and its search cannot be reported against
            assert "not found" in await refused(s, "knowledge_wiki_lint", source_id=foreign_source)
            assert "not found" in await refused(s, "knowledge_build_review_get", build_id=foreign_build)
            assert "not found" in await refused(s, "knowledge_build_review", build_id=foreign_build)
            assert "query_id" in await refused(
                s,
                "knowledge_validation_report",
                source_id=source,
                signal="question_repeated",
                query_id=foreign_query,
            )
            assert "not found" in await refused(s, "knowledge_validation_summary", source_id=foreign_source)
            assert "signal" in await refused(
                s, "knowledge_validation_report", source_id=source, signal="never_retrieved"
            )
        async with mcp_session(url, {"X-Api-Key": account.key("knowledge:r")}) as s:
            assert "knowledge:rw" in await refused(s, "knowledge_wiki_lint", source_id=source)
            assert "knowledge:rw" in await refused(
                s, "knowledge_validation_report", source_id=source, signal="answer_adopted"
            )
            assert (await call(s, "knowledge_validation_summary"))["total"] == 1
