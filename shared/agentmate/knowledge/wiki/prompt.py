"""The compile prompt and the JSON page contract (prior-art §4.8, prompt version ``wiki-prompt-3``).

The prompt lists the knowledge base (name, description, language, citation policy), the profile (allowed page
kinds and link types, max pages), then every document (each at most ``MAX_DOCUMENT_CHARS``, with a truncation
marker). An incremental prompt also lists every existing page path (so the model can link freely), the pages to
rewrite and the changed documents, and sends only the documents those pages rest on.

The reply must be one JSON object ``{"pages": [{path, kind, title, content, citations[], links[]}], "deleted":
[path]}`` (code fences are stripped). ``wiki/index.md`` and ``wiki/log.md`` are reserved for the platform.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

PROMPT_VERSION = "wiki-prompt-3"
COMPILER_VERSION = "wiki-compiler-2"
MAX_DOCUMENT_CHARS = 12_000
TRUNCATION_MARKER = "\n[… document truncated at 12000 characters …]"
INDEX_PATH = "wiki/index.md"
LOG_PATH = "wiki/log.md"
RESERVED_PATHS = frozenset({INDEX_PATH, LOG_PATH})
DOCUMENT_OPEN = '<<<DOCUMENT path="{path}">>>'
DOCUMENT_CLOSE = "<<<END DOCUMENT>>>"

SYSTEM = """You compile a knowledge base of raw documents into a wiki of synthesised Markdown pages.
Answer with ONE JSON object and nothing else:
{"pages": [{"path": "wiki/<slug>.md", "kind": "<allowed kind>", "title": "...", "content": "<Markdown>",
  "citations": [{"path": "<document path>", "heading_path": "<heading > path>", "claim": "...", "excerpt": "..."}],
  "links": [{"target": "wiki/<slug>.md", "type": "<allowed link type>"}]}],
 "deleted": ["wiki/<slug>.md"]}
Rules: every page path is unique, starts with wiki/ and ends with .md; cite only the documents given, by their
path; link only to pages of this wiki; use only the allowed page kinds and link types; never write wiki/index.md
or wiki/log.md (the platform generates them). "deleted" is only for incremental compiles: pages to remove."""


@dataclass(frozen=True, slots=True)
class PromptDocument:
    path: str
    text: str


@dataclass(frozen=True, slots=True)
class Plan:
    """What an incremental compile must do: rewrite (or delete) ``rewrite``; ``existing`` is every parent page."""

    existing: tuple[str, ...]
    rewrite: tuple[str, ...]
    changed: tuple[tuple[str, str], ...]  # (document path, added|changed|removed)


@dataclass(frozen=True, slots=True)
class KnowledgeBase:
    name: str
    description: str | None
    language: str | None
    citation_policy: str
    allowed_page_kinds: Sequence[str]
    allowed_link_types: Sequence[str]
    max_pages: int


def build_messages(
    kb: KnowledgeBase, documents: Sequence[PromptDocument], plan: Plan | None = None
) -> list[dict[str, str]]:
    lines = ["KNOWLEDGE BASE", f"name: {kb.name}"]
    if kb.description:
        lines.append(f"description: {kb.description}")
    if kb.language:
        lines.append(f"language: {kb.language}")
    lines += [
        f"citation_policy: {kb.citation_policy}",
        f"allowed_page_kinds: {', '.join(k for k in kb.allowed_page_kinds if k not in ('index', 'log'))}",
        f"allowed_link_types: {', '.join(kb.allowed_link_types)}",
        f"max_pages: {kb.max_pages}",
        f"mode: {'incremental' if plan else 'full'}",
        "",
    ]
    if plan is not None:
        lines.append("EXISTING PAGES (link to any of them; change only the pages to rewrite):")
        lines += [f"- {p}" for p in plan.existing] or ["(none)"]
        lines.append("REWRITE PAGES (rewrite each, or list it in deleted when its documents are gone):")
        lines += [f"- {p}" for p in plan.rewrite] or ["(none)"]
        lines.append("CHANGED DOCUMENTS:")
        lines += [f"- {p} ({how})" for p, how in plan.changed] or ["(none)"]
        lines.append("")
    lines.append("DOCUMENTS")
    for doc in documents:
        text = doc.text
        if len(text) > MAX_DOCUMENT_CHARS:
            text = text[:MAX_DOCUMENT_CHARS] + TRUNCATION_MARKER
        lines += [DOCUMENT_OPEN.format(path=doc.path), text.rstrip("\n"), DOCUMENT_CLOSE]
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


class InvalidReply(Exception):
    """The reply is not the page contract (not retried: the same prompt fails the same way)."""


@dataclass(slots=True)
class CitationIn:
    path: str
    heading_path: str = ""
    claim: str = ""
    excerpt: str = ""


@dataclass(slots=True)
class LinkIn:
    target: str
    type: str


@dataclass(slots=True)
class PageIn:
    path: str
    kind: str
    title: str
    content: str
    citations: list[CitationIn] = field(default_factory=list)
    links: list[LinkIn] = field(default_factory=list)


@dataclass(slots=True)
class ParsedReply:
    pages: list[PageIn]
    deleted: list[str]


_TEXT_LIMIT = 200_000
_FENCE_LANGUAGE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def unfence(text: str) -> str:
    """The body of a reply wrapped in one Markdown code fence (```json, a newline, the body, ```), else the text
    as it is. String operations only: the regular expression this replaces backtracked quadratically on a reply
    of a fence and thousands of newlines (1.3 s for 8,000; issue 20)."""
    stripped = text.strip()
    if len(stripped) < 7 or not stripped.startswith("```") or not stripped.endswith("```"):
        return text
    newline = stripped.find("\n")
    if newline == -1 or not set(stripped[3:newline].rstrip()) <= _FENCE_LANGUAGE:
        return text
    body = stripped[newline + 1 : -3]
    return body[:-1] if body.endswith("\n") else body


# JSON can carry what Postgres text cannot hold (NUL) or UTF-8 cannot encode (lone surrogates): a reply with either
# would fail the outcome transaction, so both become U+FFFD here, once, for every string of the reply (issue 20).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _text(value: Any, limit: int = _TEXT_LIMIT) -> str:
    return _UNSTORABLE.sub("\ufffd", value[:limit]) if isinstance(value, str) else ""


def _list(value: Any) -> list[Any]:
    return (
        value if isinstance(value, list) else []
    )  # a model's "citations": "none" is no citations, not a crash


def parse_reply(text: str) -> ParsedReply:
    try:
        data = json.loads(unfence(text))
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InvalidReply(f"the reply is not valid JSON ({type(exc).__name__})") from None
    if not isinstance(data, dict) or not isinstance(data.get("pages"), list):
        raise InvalidReply('the reply is not a JSON object with a "pages" array')
    pages: list[PageIn] = []
    for i, raw in enumerate(data["pages"]):
        if not isinstance(raw, dict):
            raise InvalidReply(f"pages[{i}] is not an object")
        citations = [
            CitationIn(
                path=_text(c.get("path"), 512),
                heading_path=_text(c.get("heading_path"), 1000),
                claim=_text(c.get("claim"), 2000),
                excerpt=_text(c.get("excerpt"), 2000),
            )
            for c in _list(raw.get("citations"))
            if isinstance(c, dict)
        ]
        links = [
            LinkIn(target=_text(link.get("target"), 512), type=_text(link.get("type"), 64))
            for link in _list(raw.get("links"))
            if isinstance(link, dict)
        ]
        pages.append(
            PageIn(
                path=_text(raw.get("path"), 512).strip(),
                kind=_text(raw.get("kind"), 64).strip(),
                title=_text(raw.get("title"), 500).strip(),
                content=_text(raw.get("content")),
                citations=citations,
                links=links,
            )
        )
    deleted = [_text(p, 512).strip() for p in _list(data.get("deleted")) if isinstance(p, str)]
    if not pages and not deleted:
        raise InvalidReply("the reply has no pages")
    return ParsedReply(pages, deleted)
