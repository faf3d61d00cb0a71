"""Deterministic Markdown chunking (spec/001 K2, prior-art §4.6), on markdown-it-py's CommonMark parser.

What a line *means* comes from the parser, so fences, headings and front matter follow CommonMark: a ``` line does
not close a ```` fence, ``~~~`` fences hide their ``#`` lines too, an indented ``# x`` is code, a setext heading is
a heading, and a ``#`` inside a block quote or list item does not start a section. How the text is *cut* follows
prior-art §4.6 (deviations are listed in docs/decisions.md, D-knowledge-chunking):

- sections start at each top-level heading and keep the heading line at the start of their body; content before
  the first heading is a section with an empty heading path; whitespace-only sections are dropped;
- heading path = the titles of the open headings joined with " > " (pop while the stack top's level ≥ the new
  level, then push), each title at most 200 characters, ``(untitled)`` when empty;
- a section without prose (only its heading) is not a chunk: its text is prepended to the next section that has
  prose, whose chunk keeps its own heading path; trailing prose-less sections produce nothing;
- a section over 8000 characters is packed greedily from whole top-level blocks (never cut inside a code fence
  unless one block alone exceeds the limit, which is then cut into fixed 8000-character windows); the limit is
  checked before pending heading lines are prepended, so a chunk can slightly exceed it;
- no overlap between chunks; keys ``chunk-0000``, ``chunk-0001``, … in document order; at most 256 chunks per
  document (then ``truncated``).

Front matter (a first line ``---`` closed by a later ``---`` or ``...`` line) is not CommonMark: it is blanked
before parsing, so its lines are neither a setext underline nor headings, and kept verbatim in the preamble.

Pure: no I/O, no database. The wiki compiler reuses ``chunk_markdown`` for its pages.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

MAX_CHUNK_CHARS = 8000
MAX_CHUNKS_PER_DOCUMENT = 256
MAX_HEADING_CHARS = 200
SNIPPET_CHARS = 240
HEADING_SEPARATOR = " > "
UNTITLED = "(untitled)"
MARKDOWN_EXTENSIONS = (".md", ".mdx", ".markdown")


@dataclass(frozen=True, slots=True)
class Chunk:
    key: str  # chunk-0000, …: stable ids within one document
    ordinal: int
    heading_path: str  # "" before the first heading
    headings: tuple[str, ...]
    content: str
    start_line: int  # 1-based, first line of the document this chunk covers (pending heading lines included)
    end_line: int  # 1-based, inclusive

    @property
    def char_count(self) -> int:
        return len(self.content)

    def title(self, path: str) -> str:
        """The index title: ``path`` or ``path # heading path``."""
        return f"{path} # {self.heading_path}" if self.heading_path else path

    @property
    def snippet(self) -> str:
        return snippet(self.content)


@dataclass(frozen=True, slots=True)
class Chunked:
    chunks: list[Chunk]
    truncated: bool  # more than MAX_CHUNKS_PER_DOCUMENT chunks: the rest were not produced
    markdown: bool


def snippet(content: str) -> str:
    """The first 240 characters of a chunk body (a shorter chunk is its own snippet)."""
    return content[:SNIPPET_CHARS]


def is_markdown(path: str, mime_type: str | None = None) -> bool:
    return (mime_type or "").split(";")[0].strip().lower() == "text/markdown" or posixpath.splitext(
        path.lower()
    )[1] in MARKDOWN_EXTENSIONS


@lru_cache(maxsize=1)
def parser() -> MarkdownIt:
    """The CommonMark parser (imported on first use: cold start). Raw HTML stays text; links are not validated
    here (the link extractor applies its own rules)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    md.validateLink = lambda url: True  # type: ignore[method-assign]
    return md


def split_lines(text: str) -> list[str]:
    """Lines without their ``\\n`` (CRLF and CR normalised as CommonMark does); a final newline ends the last
    line rather than starting an empty one."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


def front_matter_end(lines: list[str]) -> int:
    """Number of leading lines that are front matter (0 when there is none)."""
    if not lines or lines[0].rstrip() != "---":
        return 0
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return i + 1
    return 0  # never closed: CommonMark reads the first line as a thematic break


def parse(lines: list[str]) -> tuple[list[Token], dict[str, Any]]:
    """Tokens of the document with front matter blanked (line numbers unchanged) and the parser's env (its
    ``references`` are the link reference definitions)."""
    fm = front_matter_end(lines)
    source = "\n".join([""] * fm + lines[fm:])
    env: dict[str, Any] = {}
    return parser().parse(source, env), env


@dataclass(slots=True)
class _Section:
    start: int  # 0-based line index (the heading line, or 0 for the preamble)
    end: int  # exclusive
    heading_lines: int  # lines of the heading itself (0 preamble, 1 ATX, 2+ setext)
    headings: tuple[str, ...]
    block_starts: list[
        int
    ]  # 0-based lines where a top-level block starts (cut points for oversized sections)


def _title(inline: Token | None) -> str:
    text = " ".join((inline.content if inline is not None else "").split())
    return text[:MAX_HEADING_CHARS] or UNTITLED


def _markdown_sections(lines: list[str]) -> list[_Section]:
    tokens, _ = parse(lines)
    sections = [_Section(0, len(lines), 0, (), [])]
    stack: list[tuple[int, str]] = []
    for i, tok in enumerate(tokens):
        if tok.level != 0 or tok.nesting == -1 or tok.map is None:
            continue
        start, end = tok.map
        if tok.type == "heading_open":
            level = int(tok.tag[1])
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, _title(tokens[i + 1] if i + 1 < len(tokens) else None)))
            sections[-1].end = start
            sections.append(_Section(start, len(lines), end - start, tuple(t for _, t in stack), [start]))
        else:
            sections[-1].block_starts.append(start)
    return sections


def _plain_sections(lines: list[str]) -> list[_Section]:
    starts = [i for i, line in enumerate(lines) if line.strip() and (i == 0 or not lines[i - 1].strip())]
    return [_Section(0, len(lines), 0, (), starts)]


def _has_prose(lines: list[str], s: _Section) -> bool:
    return any(line.strip() for line in lines[s.start + s.heading_lines : s.end])


def _pieces(lines: list[str], s: _Section) -> list[tuple[int, int, str]]:
    """(first line, last line exclusive, text) pieces of one section, each ≤ MAX_CHUNK_CHARS unless a single block
    is larger (then fixed windows, whose line span is the block's)."""
    text = "".join(line + "\n" for line in lines[s.start : s.end])
    if len(text) <= MAX_CHUNK_CHARS:
        return [(s.start, s.end, text)]
    cuts = sorted({s.start, *(b for b in s.block_starts if s.start < b < s.end)})
    units = [
        (a, b, "".join(line + "\n" for line in lines[a:b]))
        for a, b in zip(cuts, [*cuts[1:], s.end], strict=True)
    ]
    out: list[tuple[int, int, str]] = []
    cur: list[tuple[int, int, str]] = []

    def flush() -> None:
        if cur:
            out.append((cur[0][0], cur[-1][1], "".join(u[2] for u in cur)))
            cur.clear()

    size = 0
    for unit in units:
        n = len(unit[2])
        if cur and size + n <= MAX_CHUNK_CHARS:
            cur.append(unit)
            size += n
            continue
        flush()
        if n > MAX_CHUNK_CHARS:
            out.extend(
                (unit[0], unit[1], unit[2][i : i + MAX_CHUNK_CHARS]) for i in range(0, n, MAX_CHUNK_CHARS)
            )
            size = 0
        else:
            cur.append(unit)
            size = n
    flush()
    return out


def chunk_document(path: str, text: str, mime_type: str | None = None) -> Chunked:
    """Chunks of one document: Markdown by mime type or extension (.md/.mdx/.markdown), else one section."""
    markdown = is_markdown(path, mime_type)
    lines = split_lines(text)
    sections = _markdown_sections(lines) if markdown else _plain_sections(lines)
    chunks: list[Chunk] = []
    pending = ""
    pending_start: int | None = None
    for s in sections:
        if not any(line.strip() for line in lines[s.start : s.end]):
            continue
        if markdown and not _has_prose(lines, s):
            pending += "".join(line + "\n" for line in lines[s.start : s.end])
            pending_start = s.start if pending_start is None else pending_start
            continue
        for first, last, piece in _pieces(lines, s):
            if len(chunks) == MAX_CHUNKS_PER_DOCUMENT:
                return Chunked(chunks, True, markdown)
            start = first
            if pending:
                piece, pending = pending + piece, ""
                start, pending_start = pending_start if pending_start is not None else first, None
            chunks.append(
                Chunk(
                    key=f"chunk-{len(chunks):04d}",
                    ordinal=len(chunks),
                    heading_path=HEADING_SEPARATOR.join(s.headings),
                    headings=s.headings,
                    content=piece,
                    start_line=start + 1,
                    end_line=last,
                )
            )
    return Chunked(chunks, False, markdown)


def chunk_markdown(path: str, text: str) -> list[Chunk]:
    """The chunks of a Markdown text (the interface the wiki compiler reuses for its pages)."""
    return chunk_document(path, text, "text/markdown").chunks
