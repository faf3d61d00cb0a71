"""knowledge_index_active, knowledge_search and knowledge_document_links over /mcp/knowledge (official SDK client):
the same answers as REST, scopes, and tenant isolation of each tool with another account's ids."""

from __future__ import annotations

import anyio
import pytest

from tests.integration.knowledge.test_knowledge_search_routes import _seed

from .conftest import mcp_session
from .test_mcp_modules import call, refused

pytestmark = pytest.mark.anyio


async def test_index_search_and_links_over_mcp(base_url, client, account, other_account):
    mine = _seed(client, account)
    theirs = _seed(client, other_account, "support/faq", "zh")
    with anyio.fail_after(60):
        async with mcp_session(f"{base_url}/mcp/knowledge", {"X-Api-Key": account.key("knowledge:rw")}) as s:
            report = await call(s, "knowledge_index_active")
            assert [i["source_id"] for i in report["items"]] == [mine["source_id"]]
            assert report["items"][0]["chunks"] == 7
            found = await call(s, "knowledge_search", query="pro plan priority support", top_k=2)
            assert found["items"][0]["citation"] == "guide/billing.md # Billing > Plans"
            assert found["query_id"]
            rest = client.post(
                "/api/knowledge/search",
                json={"query": "pro plan priority support", "top_k": 2},
                headers=account.headers("knowledge:r"),
            ).json()
            assert [i["chunk_key"] for i in rest["items"]] == [i["chunk_key"] for i in found["items"]]
            billing = mine["docs"]["guide/billing.md"]
            links = await call(s, "knowledge_document_links", document_id=billing)
            assert (
                links
                == client.get(
                    f"/api/knowledge/documents/{billing}/links", headers=account.headers("knowledge:r")
                ).json()
            )
            # doc_id stays an alias of document_id (issue 23 item 7); both naming different documents, or
            # neither, is refused naming the field
            assert await call(s, "knowledge_document_links", doc_id=billing) == links
            assert await call(s, "knowledge_document_links", document_id=billing, doc_id=billing) == links
            other_doc = mine["docs"]["guide/setup.md"]
            assert "doc_id" in await refused(
                s, "knowledge_document_links", document_id=billing, doc_id=other_doc
            )
            assert "document_id" in await refused(s, "knowledge_document_links")
            # another account's ids: not found, nothing of theirs in the answer
            assert "not found" in await refused(s, "knowledge_index_active", source_id=theirs["source_id"])
            assert "not found" in await refused(
                s, "knowledge_document_links", document_id=theirs["docs"]["退款.md"]
            )
            other = await call(s, "knowledge_search", query="退款", source_ids=[theirs["source_id"]])
            assert other["items"] == []
            assert "top_k" in await refused(s, "knowledge_search", query="x", top_k=21)
        async with mcp_session(f"{base_url}/mcp/knowledge", {"X-Api-Key": account.key("knowledge:r")}) as s:
            assert "knowledge:rw" in await refused(s, "knowledge_index_active")
            assert (await call(s, "knowledge_search", query="billing"))["items"]
