"""What the platform accepts from the model as a page, before check (issue 20): the path and the kind.

The platform owns ``wiki/index.md`` and ``wiki/log.md`` and their kinds ``index`` and ``log``: a model page on a
reserved path, or of a platform kind on any path, is dropped and recorded as ``page_rejected`` (the profile still
allows both kinds, for the platform's own pages). Reserved paths compare by their normal form, so look-alikes
(``wiki/./index.md``, ``wiki//Index.md``, full-width letters) are reserved too.

A page path must be spelled canonically, and one that is not is refused, never silently rewritten (links and
``deleted`` entries name pages by their exact spelling, so a rewritten path would leave them dangling):
``wiki/<segment>/…/<name>.md`` of at most 512 characters, each segment letters, digits, ``-``, ``_`` and ``.``,
not starting with ``.`` (so no ``.``/``..``/empty segments, no spaces, slashes doubled, backslashes, control or
Markdown characters) and unchanged by Unicode NFKC. Case is kept: ``wiki/FAQ.md`` is a page of its own.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Set
from dataclasses import dataclass, field
from typing import Any

from agentmate.knowledge.wiki.prompt import RESERVED_PATHS, PageIn, ParsedReply

PLATFORM_KINDS = frozenset({"index", "log"})
MAX_PATH_CHARS = 512
_SEGMENT_PUNCT = frozenset("-_.")


def reserved_key(path: str) -> str:
    """The form reserved paths compare in: NFKC, case-folded, format characters dropped, ``.``/``..``/empty
    segments and backslashes resolved as a file system would."""
    text = "".join(ch for ch in unicodedata.normalize("NFKC", path) if unicodedata.category(ch) != "Cf")
    parts: list[str] = []
    for seg in text.casefold().replace("\\", "/").split("/"):
        seg = seg.strip()
        if seg in ("", "."):
            continue
        if seg == "..":
            if parts:
                parts.pop()
            continue
        parts.append(seg)
    return "/".join(parts)


_RESERVED_KEYS = frozenset(reserved_key(p) for p in RESERVED_PATHS)


def is_reserved(path: str) -> bool:
    return reserved_key(path) in _RESERVED_KEYS


def _segment_ok(seg: str) -> bool:
    return bool(seg) and not seg.startswith(".") and all(ch.isalnum() or ch in _SEGMENT_PUNCT for ch in seg)


def path_refusal(path: str) -> str | None:
    """Why the platform refuses ``path`` for a model page, or None when it is a canonical, unreserved page path."""
    if is_reserved(path):
        return "reserved for the platform"
    if len(path) > MAX_PATH_CHARS:
        return f"longer than {MAX_PATH_CHARS} characters"
    segments = path.split("/")
    if (
        len(segments) < 2
        or segments[0] != "wiki"
        or not path.endswith(".md")
        or len(segments[-1]) <= 3
        or not all(_segment_ok(s) for s in segments[1:])
        or unicodedata.normalize("NFKC", path) != path
    ):
        return (
            "not a canonical wiki/<name>.md path (segments of letters, digits, '-', '_' and '.', "
            "not starting with '.')"
        )
    return None


def page_refusal(path: str, kind: str) -> str | None:
    """Why a model page (or a page carried over from a parent build) is dropped, or None when it is kept."""
    if is_reserved(path):
        return "reserved for the platform"
    if kind in PLATFORM_KINDS:
        return f"kind {kind!r} is reserved for the platform's own pages"
    return path_refusal(path)


@dataclass(slots=True)
class Screened:
    kept: list[PageIn] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)  # page_rejected events, in reply order


def screen(reply: ParsedReply, parent_paths: Set[str]) -> Screened:
    """Split a parsed reply into the pages and deletions the platform accepts and ``page_rejected`` events for the
    rest. A deletion must name a page of the parent build (``parent_paths``) that is not the platform's."""
    out = Screened()
    for page in reply.pages:
        why = page_refusal(page.path, page.kind)
        if why is None:
            out.kept.append(page)
        else:
            out.rejected.append(
                {"event_type": "page_rejected", "page_path": page.path[:MAX_PATH_CHARS], "detail": why}
            )
    for path in reply.deleted:
        if path in parent_paths and not is_reserved(path):
            out.deleted.append(path)
        else:
            out.rejected.append(
                {
                    "event_type": "page_rejected",
                    "page_path": path[:MAX_PATH_CHARS],
                    "detail": "listed in deleted, but not a page of the parent build",
                }
            )
    return out
