"""FACTS: live todos and notes, read from Postgres on every pack (never from an index: task state changes
constantly, and an indexed copy would serve stale facts with the confidence of retrieved evidence).

Each half is authorised on its own (todos:r, notes:r) and fails on its own. Matching is prior-art's: the query
(or the task) as a case-insensitive substring of title or body, newest first, at most ``top_k`` per half.
"""

from __future__ import annotations

from agentmate.context.layers.base import (
    Candidate,
    Candidates,
    Database,
    PackRequest,
    Principal,
    Retrieval,
    failure_note,
    insufficient,
)
from agentmate.core.pagination import PageParams
from agentmate.notes import service as notes
from agentmate.todos import service as todos


def _todos(db: Database, principal: Principal, req: PackRequest) -> list[Candidate]:
    page = todos.search(db, principal, PageParams(limit=req.top_k, offset=0), q=req.search_text)
    return [
        Candidate(source="todo", ref=f"todo:{t.id}", title=t.title,
                  content=f"[{t.status}/{t.priority}] {t.title}" + (f"\n{t.description}" if t.description else ""))
        for t in page.items
    ]


def _notes(db: Database, principal: Principal, req: PackRequest) -> list[Candidate]:
    page = notes.search(db, principal, PageParams(limit=req.top_k, offset=0), q=req.search_text)
    return [Candidate(source="note", ref=f"note:{n.id}", title=n.title, content=n.content) for n in page.items]


HALVES = (("todos", "todos:r", _todos), ("notes", "notes:r", _notes))


def provide(
    db: Database, retrieval: Retrieval, principal: Principal, req: PackRequest, budget: int
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
