"""TASK: the goal (needs no scope), then, with a session_id and memory:r, the session slice: the latest
checkpoint rendered in a fixed section order plus what was recorded after it, or, when the session has no
checkpoint, a replay of its recent journal. The note says which was used.

TASK fits like every layer (``budget.fit``: provider order, cut at a boundary), but fits its own items so that
what it cuts is never silent and never dangles: when the goal, the checkpoint or the journal is truncated or
dropped, the note says so (it never claims a resume from a checkpoint that was dropped) and the pack's
``warnings`` repeat it; a cut checkpoint never ends on a section header whose first line was cut."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from agentmate.context.budget import first_line, fit
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
from agentmate.memory.schemas import Checkpoint, Resume, TimelineItem
from agentmate.memory.service import checkpoints

ACTIVITY_EVENTS = ("goal", "decision", "outcome", "correction", "issue", "checkpoint")
"""Journal events worth a line in TASK (with skill runs); observations, actions and notes are left to MEMORY."""
ACTIVITY_LINES = 12
LINE_MAX = 300
RESUMED = "resumed from"
TEXT_KEYS = ("text", "summary", "content", "message", "goal", "decision", "outcome", "reason", "note")


def _when(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LINE_MAX else text[:LINE_MAX] + "…"


def _payload_text(payload: dict[str, Any] | None) -> str:
    payload = payload or {}
    for key in TEXT_KEYS:
        if isinstance(payload.get(key), str) and payload[key].strip():
            return str(payload[key])
    return json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def activity_line(item: TimelineItem) -> str | None:
    if item.kind == "skill_log":
        version = f"@{item.skill_version}" if item.skill_version else ""
        text = f"skill run {item.skill_name}{version}: {item.outcome or 'no outcome'}"
        if item.failure_reason:
            text += f" ({item.failure_reason})"
        return f"- {_when(item.occurred_at)} {_one_line(text)}"
    if item.event_type in ACTIVITY_EVENTS:
        return f"- {_when(item.occurred_at)} {item.event_type}: {_one_line(_payload_text(item.payload))}"
    return None


def render_checkpoint(cp: Checkpoint) -> str:
    """Goal, Next, Open, Done, Notes: always this order (prior-art's map iteration made it random), what is
    ahead before what is behind, so a checkpoint cut to TASK's budget keeps its goal and next steps."""
    lines = [f"Goal: {cp.goal}"]
    for label, values in (("Next", cp.next), ("Open", cp.open), ("Done", cp.done)):
        if values:
            lines.append(f"{label}:")
            lines += [f"- {v}" for v in values]
    if cp.notes:
        lines.append(f"Notes: {cp.notes}")
    return "\n".join(lines)


def _slice(resumed: Resume) -> tuple[list[Candidate], str]:
    session = resumed.session_id
    lines = [line for line in map(activity_line, resumed.since_checkpoint) if line][-ACTIVITY_LINES:]
    items: list[Candidate] = []
    cp = resumed.checkpoint
    if cp is not None:
        label = first_line(cp.label) or first_line(cp.goal)
        items.append(
            Candidate(
                source="checkpoint",
                ref=f"memory_event:{cp.event_id}",
                title=label,
                content=render_checkpoint(cp),
            )
        )
        if lines:
            items.append(
                Candidate(
                    source="journal",
                    ref=f"session:{session}",
                    title="since checkpoint",
                    content="\n".join(lines),
                )
            )
        note = (
            f"{RESUMED} checkpoint {cp.event_id} of {_when(cp.occurred_at)}; journal entries since "
            f"then: {len(resumed.since_checkpoint)}"
        )
        return items, note
    if resumed.resolution == "empty":
        return items, f"session {session!r} has no checkpoint and no journal entries: goal only"
    if lines:
        items.append(
            Candidate(
                source="journal",
                ref=f"session:{session}",
                title="recent session activity",
                content="\n".join(lines),
            )
        )
    return items, (
        f"no checkpoint in session {session!r}: journal replay of its last "
        f"{len(resumed.since_checkpoint)} entries"
    )


SECTION_HEADERS = frozenset(("Next:", "Open:", "Done:"))
"""The checkpoint's list headers: a cut never ends on one (its first line went with the cut)."""


def _what(item: Candidate) -> str:
    """How a note names a TASK item."""
    if item.source == "task":
        return "goal"
    if item.source == "checkpoint":
        return f"checkpoint {item.ref.partition(':')[2]}"
    return f"journal ({item.title})"


def _without_dangling_header(content: str) -> str:
    """A cut checkpoint without the section headers it ends on: a header whose first line was cut says
    nothing."""
    lines = content.split("\n")
    while len(lines) > 1 and lines[-1].strip() in SECTION_HEADERS:
        lines.pop()
    return "\n".join(lines).rstrip(" \n")


def _fitted(items: list[Candidate], budget: int) -> tuple[list[Candidate], int, list[str]]:
    """TASK fits its own items (``budget.fit``, then a cut checkpoint loses a dangling header): the kept items,
    already cut (``truncated``), how many were dropped, and what was cut or dropped as note phrases: every
    item, none silently."""
    fitted = fit([c.content for c in items], budget)
    kept = dict(fitted.kept)
    out: list[Candidate] = []
    cuts = []
    for index, item in enumerate(items):
        if index not in kept:
            cuts.append(f"{_what(item)} dropped" + (", not resumed" if item.source == "checkpoint" else ""))
            continue
        content = kept[index].content
        if kept[index].truncated:
            if item.source == "checkpoint":
                content = _without_dangling_header(content)
            cuts.append(f"{_what(item)} truncated to {len(content)} of {len(item.content)} characters")
        out.append(replace(item, content=content, truncated=kept[index].truncated))
    return out, fitted.dropped, cuts


def _budgeted(items: list[Candidate], note: str | None, warn: bool, budget: int) -> Candidates:
    """The candidates fitted to TASK's budget, with a note that says what the budget cut or dropped
    (warned)."""
    kept, dropped, cuts = _fitted(items, budget)
    if not cuts:
        return Candidates(items=kept, note=note, warn=warn)
    if note and note.startswith(RESUMED) and any(c.endswith("not resumed") for c in cuts):
        note = None  # the checkpoint did not go out: never say it was resumed from
    cut = f"{'; '.join(cuts)}: TASK's budget is {budget} characters (raise max_chars or request fewer layers)"
    return Candidates(items=kept, note=f"{cut}; {note}" if note else cut, warn=True, unread=dropped)


def provide(
    db: TenantTransactions, retrieval: Retrieval, principal: Principal, req: PackRequest, budget: int
) -> Candidates:
    goal = Candidate(source="task", ref="task", title="goal", content=req.task)
    if req.session_id is None:
        return _budgeted([goal], None, False, budget)
    if not principal.can("memory:r"):
        return _budgeted([goal], f"session slice omitted: {insufficient('memory:r')}", True, budget)
    try:
        items, note = _slice(checkpoints.resume(db, principal, req.session_id))
    except Exception as exc:  # the goal still goes out
        return _budgeted([goal], f"session slice {failure_note('TASK', exc)}", True, budget)
    return _budgeted([goal, *items], note, False, budget)
