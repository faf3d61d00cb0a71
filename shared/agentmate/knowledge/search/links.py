"""Package-internal link extraction (prior-art §4.6), on the same CommonMark parse as the chunker.

Links are inline links and images (``[x](target "title")``, ``![i](target)``, reference links as the parser
resolves them) and every link reference definition (``[x]: target``), in document order; code spans, fences and
indented code never yield links because the parser does not read links there. A target is kept when it is a
relative path: scheme URLs (``https:``, ``mailto:``), protocol-relative ``//…``, absolute ``/…`` paths and pure
``#fragments`` are ignored; ``#…`` and ``?…`` are stripped, percent-escapes decoded, and the path resolved
against the document's folder. Targets escaping the package root (``../`` past it) or pointing at the document
itself are dropped; the rest are de-duplicated (first seen wins) and capped at 128 per document. Whether a target
exists is decided by the indexer: a missing one is kept as a dangling link.

Pure: no I/O.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote

from agentmate.knowledge.chunking import parse, split_lines

MAX_LINKS_PER_DOCUMENT = 128
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


@dataclass(frozen=True, slots=True)
class Link:
    target_path: str  # package-relative, cleaned
    kind: str  # link | image | reference


@dataclass(frozen=True, slots=True)
class Extracted:
    links: list[Link]
    escaping: int  # targets dropped because they leave the package
    truncated: bool  # more than MAX_LINKS_PER_DOCUMENT distinct targets


def resolve(document_path: str, href: str) -> str | None:
    """The package path a link points at, ``""`` when it escapes the package, None when it is not a package
    link (scheme, ``//``, absolute, pure fragment, empty)."""
    href = href.strip()
    if not href or href.startswith(("#", "/", "\\")) or _SCHEME.match(href):
        return None
    href = re.split(r"[#?]", href, maxsplit=1)[0]
    target = unquote(href)
    if not target:
        return None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(document_path), target))
    if joined == ".." or joined.startswith("../") or joined.startswith("/"):
        return ""
    return joined


def extract_links(document_path: str, text: str) -> Extracted:
    tokens, env = parse(split_lines(text))
    found: list[tuple[int, int, str, str]] = []  # (line, order, href, kind)
    order = 0
    for tok in tokens:
        if tok.type != "inline" or not tok.children:
            continue
        line = tok.map[0] if tok.map else 0
        for child in tok.children:
            href = (
                child.attrs.get("href")
                if child.type == "link_open"
                else child.attrs.get("src")
                if child.type == "image"
                else None
            )
            if isinstance(href, str):
                found.append((line, order, href, "link" if child.type == "link_open" else "image"))
                order += 1
    for ref in (env.get("references") or {}).values():
        mapping = ref.get("map") or [0]
        found.append((mapping[0], order, str(ref.get("href", "")), "reference"))
        order += 1
    found.sort(key=lambda f: (f[0], f[1]))
    seen: set[str] = set()
    links: list[Link] = []
    escaping = 0
    truncated = False
    for _, _, href, kind in found:
        target = resolve(document_path, href)
        if target is None:
            continue
        if target == "":
            escaping += 1
            continue
        if target == document_path or target in seen:
            continue
        if len(links) == MAX_LINKS_PER_DOCUMENT:
            truncated = True
            break
        seen.add(target)
        links.append(Link(target, kind))
    return Extracted(links, escaping, truncated)
