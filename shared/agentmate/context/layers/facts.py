"""FACTS: live todos and notes, read from Postgres on every pack (never from an index: task state changes
constantly, and an indexed copy would serve stale facts with the confidence of retrieved evidence).

Each half is authorised on its own (todos:r, notes:r) and fails on its own. Matching is word by word, with the
lexical leg's tokenizer and ranking rules (``retrieval.bm25``: stop words dropped, English words stemmed, BM25),
so a note that shares the task's important words is found although the task as a whole is not a substring of it
(prior-art matched the whole query as one substring). Postgres narrows each half to at most ``CANDIDATES`` rows
containing any of the query's terms (those holding the most first); Python ranks them and keeps ``top_k``.
``GET /api/notes?q=`` keeps its substring match (its ``q`` is frozen by the SYS-006 read contract).
"""

from __future__ import annotations

from agentmate.context.layers.base import (
    Candidate,
    Candidates,
    PackRequest,
    Principal,
    Retrieval,
    TenantTransactions,
    failure_note,
    insufficient,
)
from agentmate.notes import service as notes
from agentmate.retrieval import bm25
from agentmate.todos import service as todos

CANDIDATES = 100  # per half: rows read for ranking


def _best(query: str, texts: list[str], top_k: int) -> list[int]:
    """Indexes of the ``top_k`` texts that rank best for ``query`` (BM25 over the candidates)."""
    return [r.index for r in bm25.rank(bm25.terms(query), texts)[:top_k]]


def _todos(db: TenantTransactions, principal: Principal, req: PackRequest) -> list[Candidate]:
    found = todos.containing_any_of(db, principal, bm25.probes(bm25.terms(req.search_text)), CANDIDATES)
    keep = _best(req.search_text, [f"{t.title}\n{t.description or ''}" for t in found], req.top_k)
    return [
        Candidate(
            source="todo",
            ref=f"todo:{t.id}",
            title=t.title,
            content=f"[{t.status}/{t.priority}] {t.title}" + (f"\n{t.description}" if t.description else ""),
        )
        for t in (found[i] for i in keep)
    ]


def _notes(db: TenantTransactions, principal: Principal, req: PackRequest) -> list[Candidate]:
    found = notes.containing_any_of(db, principal, bm25.probes(bm25.terms(req.search_text)), CANDIDATES)
    keep = _best(req.search_text, [f"{n.title}\n{n.content}" for n in found], req.top_k)
    return [
        Candidate(source="note", ref=f"note:{n.id}", title=n.title, content=n.content)
        for n in (found[i] for i in keep)
    ]


HALVES = (("todos", "todos:r", _todos), ("notes", "notes:r", _notes))


def provide(
    db: TenantTransactions, retrieval: Retrieval, principal: Principal, req: PackRequest, budget: int
) -> Candidates:
    items: list[Candidate] = []
    notes_: list[str] = []
    for name, scope, read in HALVES:
        if not principal.can(scope):
            notes_.append(f"{name}: {insufficient(scope)}")
            continue
        try:
            items += read(db, principal, req)
        except Exception as exc:
            notes_.append(f"{name}: {failure_note('FACTS', exc)}")
    return Candidates(items=items, note="; ".join(notes_) or None, warn=bool(notes_))
