"""The context pack: one call that assembles a budgeted, cited execution context from six layers.

Per layer: check its scope (a refused layer is empty with a note and its budget stays unused), ask its
provider for ordered candidates (a failing provider is empty with a note: the pack still succeeds), then fit
them to the layer's own budget (``budget.fit``; budgets are never lent). Every empty layer with a note, and
every partial one (a refused FACTS half, a degraded search leg, an omitted TASK session slice), is echoed in
``warnings`` as ``LAYER: note``. Layers come out in the canonical order whatever order they were requested in.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from agentmate.context.budget import budgets, fit
from agentmate.context.layers import facts, knowledge, memory, skill, task, working
from agentmate.context.layers.base import Candidates, failure_note, insufficient
from agentmate.context.schemas import LAYERS, LayerName, Pack, PackItem, PackLayer, PackRequest
from agentmate.context.transaction import SharedTransaction
from agentmate.core.db import TenantTransactions
from agentmate.core.errors import FieldError, ValidationFailed
from agentmate.core.principal import Principal
from agentmate.retrieval.service import Retrieval

Provider = Callable[[TenantTransactions, Retrieval, Principal, PackRequest, int], Candidates]

PROVIDERS: dict[str, Provider] = {
    "SKILL": skill.provide,
    "KNOWLEDGE": knowledge.provide,
    "MEMORY": memory.provide,
    "FACTS": facts.provide,
    "WORKING": working.provide,
    "TASK": task.provide,
}
LAYER_SCOPES: dict[str, str] = {
    "SKILL": "skills:r",
    "KNOWLEDGE": "knowledge:r",
    "MEMORY": "memory:r",
    "WORKING": "memory:r",
}
"""Scopes checked before a provider runs. FACTS authorises its two halves itself (todos:r, notes:r); TASK's goal
needs none and its session slice checks memory:r."""
PARALLEL = False
"""Run the layer providers one after another, in one transaction on one connection (docs/decisions.md
D-context-1: on threads a pack was faster by a fraction of the goal, for six connections per Lambda environment
instead of one). ``True`` needs ``DB_POOL_MAX_SIZE`` = len(LAYERS) (tests/contract/test_context_template.py)."""


def requested_layers(req: PackRequest) -> list[LayerName]:
    """The layers to build, in canonical order. The default set is every layer but WORKING, which joins only
    with a session_id (a session-less pack has nothing to put there)."""
    if req.layers:
        chosen: set[str] = set(req.layers)
    else:
        chosen = {name for name in LAYERS if name != "WORKING" or req.session_id is not None}
    return [name for name in LAYERS if name in chosen]


def _run(
    db: TenantTransactions,
    retrieval: Retrieval,
    principal: Principal,
    req: PackRequest,
    name: LayerName,
    budget: int,
) -> Candidates:
    scope = LAYER_SCOPES.get(name)
    if scope is not None and not principal.can(scope):
        return Candidates(note=insufficient(scope))
    try:
        return PROVIDERS[name](db, retrieval, principal, req, budget)
    except Exception as exc:
        return Candidates(note=failure_note(name, exc))


def _assemble(name: LayerName, budget: int, found: Candidates) -> PackLayer:
    fitted = fit([c.content for c in found.items], budget)
    items = []
    for index, kept in fitted.kept:
        c = found.items[index]
        items.append(
            PackItem(
                layer=name,
                source=c.source,
                ref=c.ref,
                title=c.title,
                content=kept.content,
                citation=c.citation,
                score=c.score,
                truncated=kept.truncated or c.truncated,
            )
        )
    if found.newest_first:
        items.reverse()
    return PackLayer(
        layer=name,
        items=items,
        char_budget=budget,
        chars_used=fitted.chars_used,
        dropped=fitted.dropped + found.unread,
        truncated=any(item.truncated for item in items),
        note=found.note,
        stale=found.stale,
    )


def render(layers: list[PackLayer]) -> str:
    """The text form: per non-empty layer a ``[LAYER]`` line, then per item a ``- source · title · citation``
    header (``· truncated`` when cut) and its content."""
    blocks = []
    for layer in layers:
        if not layer.items:
            continue
        parts = []
        for item in layer.items:
            header = " · ".join(
                p
                for p in (item.source, item.title, item.citation, "truncated" if item.truncated else None)
                if p
            )
            parts.append(f"- {header}\n{item.content}")
        blocks.append(f"[{layer.layer}]\n" + "\n\n".join(parts))
    return "\n\n".join(blocks) + "\n" if blocks else ""


_executor: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _executor
    if _executor is None:
        with _lock:
            if _executor is None:
                _executor = ThreadPoolExecutor(max_workers=len(LAYERS), thread_name_prefix="context-layer")
    return _executor


def pack(
    db: TenantTransactions,
    retrieval: Retrieval,
    principal: Principal,
    req: PackRequest,
    *,
    parallel: bool | None = None,
) -> Pack:
    """Assemble the pack. ``parallel`` runs the providers on threads, each with its own pooled connection."""
    if req.memory_scope_key is not None and req.memory_scope_type is None:
        raise ValidationFailed(
            [
                FieldError("memory_scope_key", "requires memory_scope_type"),
                FieldError("memory_scope_type", "required when memory_scope_key is sent"),
            ]
        )
    names = requested_layers(req)
    shares = budgets(req.max_chars, names)
    if parallel if parallel is not None else PARALLEL:
        futures = [_pool().submit(_run, db, retrieval, principal, req, n, shares[n]) for n in names]
        found = [f.result() for f in futures]
    else:  # one transaction for all layers, each in a savepoint of its own (context/transaction.py)
        with db.tenant(principal.account_id, pipeline=True) as conn:
            shared = SharedTransaction(conn, principal.account_id)
            found = [_run(shared, retrieval, principal, req, n, shares[n]) for n in names]
    layers = [_assemble(n, shares[n], f) for n, f in zip(names, found, strict=True)]
    warnings = [
        f"{layer.layer}: {layer.note}"
        for layer, f in zip(layers, found, strict=True)
        if layer.note and (f.warn or not layer.items)
    ]
    return Pack(
        task=req.task,
        session_id=req.session_id,
        layers=layers,
        max_chars=req.max_chars,
        chars_used=sum(layer.chars_used for layer in layers),
        rendered=render(layers) if req.render else None,
        warnings=warnings,
    )
