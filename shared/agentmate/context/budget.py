"""Budgets, ``fit`` and boundary truncation (prior-art §4.5), as pure functions.

Shares are integers so the split is exact: a layer's budget is
``max_chars * share // Σ shares of the requested layers``, and the integer remainder goes to the requested
layer with the largest share. SKILL, KNOWLEDGE, MEMORY and FACTS keep prior-art's values; WORKING's 15 sits
beside them; TASK's is 25, not prior-art's 5 (docs/decisions.md D-context-2): sized so that the goal and the
latest checkpoint's goal and next steps fit at ordinary budgets (``TASK_SHARE``).

All lengths are Unicode code points (Python ``len``), the unit of ``max_chars``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

MIN_TRUNCATE = 80
"""An item that does not fit is cut only when at least this many characters remain; otherwise it is dropped."""
TASK_SHARE = 25
"""The smallest round share that meets both of TASK's sizing rules with all six layers requested (Σ 135):
(1) at the smallest pack (500 characters) TASK gets at least ``MIN_TRUNCATE`` (92), so a goal too long for it is
cut at a boundary, never dropped; (2) from 2700 characters on it gets at least 500: a goal of 200 characters
plus a checkpoint's goal line and three next steps. Prior-art's 5 gave 130 at 3000 and 52 at 1200."""
SHARES: dict[str, int] = {
    "SKILL": 30,
    "KNOWLEDGE": 35,
    "MEMORY": 20,
    "FACTS": 10,
    "WORKING": 15,
    "TASK": TASK_SHARE,
}
SEPARATORS = ("\n\n", "。", ". ", "\n", " ")
"""Boundaries tried in order: paragraph, CJK full stop, sentence, line, word."""
TITLE_MAX = 80


def budgets(max_chars: int, layers: Iterable[str]) -> dict[str, int]:
    """Each requested layer's budget; they sum to ``max_chars`` exactly."""
    names = list(dict.fromkeys(layers))
    if not names:
        return {}
    total = sum(SHARES[n] for n in names)
    out = {n: max_chars * SHARES[n] // total for n in names}
    largest = max(names, key=lambda n: SHARES[n])  # shares are distinct, so this is unambiguous
    out[largest] += max_chars - sum(out.values())
    return out


def truncate_at_boundary(text: str, limit: int) -> str:
    """The first ``limit`` characters, cut after the last separator of the first kind that keeps at least half
    of them (trailing spaces and newlines trimmed); a hard cut at ``limit`` when none does."""
    if len(text) <= limit:
        return text
    window = text[:limit]
    for sep in SEPARATORS:
        at = window.rfind(sep)
        if at > 0:
            kept = window[: at + len(sep)]
            if len(kept) >= limit // 2:
                return kept.rstrip(" \n")
    return window


@dataclass(frozen=True)
class Fitted:
    content: str
    truncated: bool


@dataclass(frozen=True)
class FitResult:
    kept: list[tuple[int, Fitted]]
    """(index into the candidates, the content to keep)"""
    dropped: int
    chars_used: int

    @property
    def truncated(self) -> bool:
        return any(f.truncated for _, f in self.kept)


def fit(contents: Sequence[str], budget: int) -> FitResult:
    """Walk candidates in provider order: keep what fits; the first that does not is cut to the remaining
    budget when at least ``MIN_TRUNCATE`` characters remain (and the walk stops), else it and the rest are
    dropped. Never skips ahead to a smaller item: provider order is priority order."""
    remaining = budget
    kept: list[tuple[int, Fitted]] = []
    for index, content in enumerate(contents):
        if remaining <= 0:
            break
        if len(content) <= remaining:
            kept.append((index, Fitted(content, False)))
            remaining -= len(content)
            continue
        if remaining >= MIN_TRUNCATE:
            cut = truncate_at_boundary(content, remaining)
            kept.append((index, Fitted(cut, True)))
            remaining -= len(cut)
        break
    return FitResult(kept=kept, dropped=len(contents) - len(kept), chars_used=budget - remaining)


def first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip().lstrip("#>-* \t").strip()
        if line:
            return line
    return ""


def derived_title(kind: str, *candidates: str) -> str:
    """``"<kind> · <first non-empty of candidates>"`` (Markdown ``#>-*`` markers stripped, at most 80 characters
    plus "…"); just ``kind`` when every candidate is empty (prior-art's MEMORY title rule)."""
    for candidate in candidates:
        label = first_line(candidate or "")
        if label:
            if len(label) > TITLE_MAX:
                label = label[:TITLE_MAX] + "…"
            return f"{kind} · {label}"
    return kind
