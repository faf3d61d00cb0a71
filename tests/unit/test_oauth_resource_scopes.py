"""The scopes each protected resource offers (``auth.audience.scopes_for_resource``) and the words of the
resource side's challenges (``auth.oauth.challenge``). The MCP module table declares its modules' scopes so the
auth function need not import the tools; this test keeps the table equal to what the tools require."""

from __future__ import annotations

import pytest

from agentmate.auth.audience import scopes_for_resource
from agentmate.auth.oauth.challenge import bearer_challenge, metadata_url
from agentmate.core.mcp_modules import MODULE_TABLE
from agentmate.core.scopes import SCOPES

ISSUER = "https://agentmate.example"


def _registry_scopes() -> dict[str, tuple[str, ...]]:
    from agentmate.mcp import registry

    return {
        name: tuple(s for s in SCOPES if any(s in spec.scopes for spec in toolset.specs))
        for name, toolset in registry.load().items()
    }


def test_the_module_table_declares_exactly_the_scopes_its_tools_require():
    assert {m.name: m.scopes for m in MODULE_TABLE} == _registry_scopes()


def test_the_context_module_offers_every_scope_a_pack_layer_reads():
    # A token for /mcp/context would otherwise fill only the memory layers of the pack
    from agentmate.context.layers.facts import HALVES
    from agentmate.context.service import LAYER_SCOPES

    layer_reads = set(LAYER_SCOPES.values()) | {scope for _, scope, _ in HALVES}
    offered = set(scopes_for_resource(ISSUER, f"{ISSUER}/mcp/context"))
    assert offered == layer_reads, sorted(offered ^ layer_reads)


def test_a_module_resource_offers_its_tools_scopes_and_the_aggregate_their_union():
    by_module = _registry_scopes()
    reads = {m.name: set(m.reads) for m in MODULE_TABLE}
    for name, scopes in by_module.items():
        offered = scopes_for_resource(ISSUER, f"{ISSUER}/mcp/{name}")
        assert offered == tuple(s for s in SCOPES if s in set(scopes) | reads[name])
    union = {s for scopes in by_module.values() for s in scopes} | set().union(*reads.values())
    assert scopes_for_resource(ISSUER, f"{ISSUER}/mcp") == tuple(s for s in SCOPES if s in union)
    assert scopes_for_resource(ISSUER, f"{ISSUER}/mcp/todos") == ("todos:r", "todos:rw")
    assert scopes_for_resource(ISSUER, f"{ISSUER}/mcp/knowledge") == (
        "skills:r",
        "knowledge:r",
        "knowledge:rw",
    )
    assert "manage_keys" not in scopes_for_resource(ISSUER, f"{ISSUER}/mcp")


@pytest.mark.parametrize(
    "resource", [ISSUER, f"{ISSUER}/", f"{ISSUER}/api", "HTTPS://Agentmate.example/api/"]
)
def test_the_server_and_the_rest_api_offer_all_17_scopes(resource):
    assert scopes_for_resource(ISSUER, resource) == SCOPES and len(SCOPES) == 17


@pytest.mark.parametrize(
    "resource", [f"{ISSUER}/mcp/nope", f"{ISSUER}/apix", "https://other.example/api", f"{ISSUER}/mcp/todos/x"]
)
def test_a_resource_this_server_does_not_have_offers_no_scope(resource):
    assert scopes_for_resource(ISSUER, resource) == ()


def test_the_metadata_url_inserts_the_well_known_path_before_the_resource_path():
    assert metadata_url(ISSUER, ISSUER) == f"{ISSUER}/.well-known/oauth-protected-resource"
    assert metadata_url(ISSUER, f"{ISSUER}/api") == f"{ISSUER}/.well-known/oauth-protected-resource/api"
    assert (
        metadata_url(ISSUER + "/", f"{ISSUER}/mcp/todos/")
        == f"{ISSUER}/.well-known/oauth-protected-resource/mcp/todos"
    )


def test_a_bearer_challenge_names_the_metadata_and_scopes_and_quotes_safely():
    assert bearer_challenge(ISSUER, f"{ISSUER}/mcp/todos", ["todos:r", "todos:rw"]) == (
        f'Bearer resource_metadata="{ISSUER}/.well-known/oauth-protected-resource/mcp/todos", '
        'scope="todos:r todos:rw"'
    )
    got = bearer_challenge(
        ISSUER,
        f"{ISSUER}/api",
        ["todos:rw"],
        error="insufficient_scope",
        description='needs "x" — y\\',
        realm="a",
    )
    assert got == (
        'Bearer realm="a", error="insufficient_scope", error_description="needs  x    y ", '
        f'resource_metadata="{ISSUER}/.well-known/oauth-protected-resource/api", scope="todos:rw"'
    )
    assert "scope=" not in bearer_challenge(ISSUER, f"{ISSUER}/api", [])
