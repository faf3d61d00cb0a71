"""template.yaml's context function, read as data: its connection pool fits how the pack runs its layers
(docs/decisions.md D-context-1)."""

from __future__ import annotations

from agentmate.context import service
from agentmate.context.schemas import LAYERS
from tests.contract.test_worker_template import RESOURCES


def test_the_context_functions_pool_is_what_the_pack_needs():
    env = RESOURCES["ContextFunction"]["Properties"]["Environment"]["Variables"]
    # serial: one connection (one transaction for every layer); parallel: one per layer
    assert int(env["DB_POOL_MAX_SIZE"]) == (len(LAYERS) if service.PARALLEL else 1)
