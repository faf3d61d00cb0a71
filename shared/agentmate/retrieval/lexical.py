# ruff: noqa: RUF002, RUF003  (full-width and CJK characters are the subject of this module)
"""CJK-aware lexical projection for the Postgres full-text leg (prior-art §4.1).

Why a projection: Postgres' `simple` configuration does not segment CJK script, so a whole Chinese
sentence would become one unmatchable lexeme. We therefore store `lexical_text` (CJK runs as
overlapping character bigrams, other letter/digit runs as lowercased words) and index it with
`to_tsvector('simple', lexical_text)`. The query side is built from the *same* tokenizer; that shared
rule is the correctness condition of the scheme.

Why the query side never breaks: user text never reaches `to_tsquery` raw. Tokens consist only of
letters, digits and combining marks, every token is single-quoted (with `'` doubled and `\\` doubled),
and the operators between them are ours. So no input can produce a tsquery syntax error.

Small, deliberate refinements over the Go original (index and query share them, so they are safe):
- text is NFKC-normalised first, so full-width `ＡＰＩ` and `api` meet, and ligatures split;
- the Katakana/Hiragana prolonged sound mark `ー` (U+30FC, U+FF70) counts as CJK, so `ラーメン`
  stays one CJK run instead of being cut into `ラ`, `ー`, `メン`;
- combining marks (category M) continue a word run, so decomposed accents and Indic vowel signs do
  not cut words apart;
- query-side terms are de-duplicated and capped (`MAX_QUERY_WORDS`, `MAX_QUERY_CJK_TERMS`): an AND of
  hundreds of words can never match anything and only costs planner time;
- the index-side projection stops adding new distinct tokens once their bytes approach the tsvector
  size limit (1 MB), so a huge document can never make `to_tsvector` raise.

Pure functions, standard library only (cold start matters).
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "MAX_QUERY_CJK_TERMS",
    "MAX_QUERY_WORDS",
    "MAX_TOKEN_CHARS",
    "is_cjk",
    "projection",
    "quote",
    "search_tokens",
    "split_tokens",
    "tokens",
    "tsquery",
]

MAX_QUERY_WORDS = 32
MAX_QUERY_CJK_TERMS = 64
# Tokens sent to the ranked (BM25) leg; the database keeps the first 16 distinct terms that are not stop words.
MAX_SEARCH_TOKENS = 64
# Postgres skips (with a NOTICE) words of 2048+ bytes on both sides; tokens that long are noise
# (base64 blobs, minified code). Cut them here so index and query agree regardless of server version.
MAX_TOKEN_CHARS = 256
# tsvector's hard limit is 1 MiB of lexeme text (MAXSTRPOS); stay well under it.
_MAX_PROJECTION_UNIQUE_BYTES = 900_000

# Unicode Han, Hiragana, Katakana and Hangul script ranges (Unicode 15), plus U+30FC/U+FF70.
# Python's unicodedata has no script property, hence explicit ranges (sorted, non-overlapping).
_CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x2E80, 0x2E99),  # CJK Radicals Supplement
    (0x2E9B, 0x2EF3),
    (0x2F00, 0x2FD5),  # Kangxi Radicals
    (0x3005, 0x3005),  # 々
    (0x3007, 0x3007),  # 〇
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x302E, 0x302F),  # Hangul tone marks
    (0x3038, 0x303B),
    (0x3041, 0x3096),  # Hiragana
    (0x309D, 0x309F),
    (0x30A1, 0x30FA),  # Katakana
    (0x30FC, 0x30FF),  # ー (prolonged sound mark) + Katakana iteration marks, digraph
    (0x3105, 0x312F),  # Bopomofo (Han-adjacent, unsegmented too)
    (0x3131, 0x318E),  # Hangul Compatibility Jamo
    (0x31A0, 0x31BF),  # Bopomofo Extended
    (0x31F0, 0x31FF),  # Katakana Phonetic Extensions
    (0x3200, 0x321E),  # Parenthesized Hangul
    (0x3260, 0x327E),  # Circled Hangul
    (0x32D0, 0x32FE),  # Circled Katakana
    (0x3300, 0x3357),  # Squared Katakana
    (0x3400, 0x4DBF),  # CJK Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xA960, 0xA97C),  # Hangul Jamo Extended-A
    (0xAC00, 0xD7A3),  # Hangul Syllables
    (0xD7B0, 0xD7C6),  # Hangul Jamo Extended-B
    (0xD7CB, 0xD7FB),
    (0xF900, 0xFA6D),  # CJK Compatibility Ideographs
    (0xFA70, 0xFAD9),
    (0xFF66, 0xFF9D),  # Halfwidth Katakana (incl. ｰ U+FF70)
    (0xFFA0, 0xFFBE),  # Halfwidth Hangul
    (0xFFC2, 0xFFC7),
    (0xFFCA, 0xFFCF),
    (0xFFD2, 0xFFD7),
    (0xFFDA, 0xFFDC),
    (0x16FE2, 0x16FE3),
    (0x16FF0, 0x16FF1),
    (0x1AFF0, 0x1B16F),  # Kana Extended-B, Kana Supplement, Kana Extended-A, Small Kana Extension
    (0x1F200, 0x1F200),  # Square Hiragana Hoka
    (0x20000, 0x2A6DF),  # CJK Extension B
    (0x2A700, 0x2EBEF),  # CJK Extensions C-F, I
    (0x2EBF0, 0x2EE5D),
    (0x2F800, 0x2FA1D),  # CJK Compatibility Ideographs Supplement
    (0x30000, 0x323AF),  # CJK Extensions G-H
)
_CJK_STARTS = tuple(lo for lo, _ in _CJK_RANGES)


def is_cjk(ch: str) -> bool:
    """True when the character belongs to Han, Hiragana, Katakana or Hangul (see module docstring)."""
    if len(ch) != 1:
        return False
    cp = ord(ch)
    if cp < 0x1100:  # fast path: Latin, Greek, Cyrillic, ...
        return False
    # binary search over the sorted range starts
    lo, hi = 0, len(_CJK_STARTS)
    while lo < hi:
        mid = (lo + hi) // 2
        if _CJK_STARTS[mid] <= cp:
            lo = mid + 1
        else:
            hi = mid
    if lo == 0:
        return False
    start, end = _CJK_RANGES[lo - 1]
    return start <= cp <= end


def _is_word_char(ch: str) -> bool:
    # Letters (L*) and decimal digits (Nd), as Go's unicode.IsLetter / unicode.IsDigit.
    return ch.isalpha() or ch.isdecimal()


def _is_mark(ch: str) -> bool:
    return unicodedata.category(ch).startswith("M")


# ASCII text (most chunks) takes a regex instead of the per-character loop, 30x faster at index time. It is the
# same rule: NFKC leaves ASCII unchanged, no ASCII character is CJK or a combining mark, and an ASCII character is
# a letter or decimal digit exactly when it is in [A-Za-z0-9].
_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")


def _scan(text: str) -> list[tuple[bool, str]]:
    """One pass over `text`: (is_cjk_term, token) pairs in order of appearance."""
    if text.isascii():
        return [(False, w.lower()[:MAX_TOKEN_CHARS]) for w in _ASCII_WORD.findall(text)]
    return _scan_chars(text)


def _scan_chars(text: str) -> list[tuple[bool, str]]:
    """``_scan`` for any text, character by character."""
    out: list[tuple[bool, str]] = []
    if not text:
        return out
    cjk_run: list[str] = []
    word_run: list[str] = []

    def flush_cjk() -> None:
        if len(cjk_run) == 1:
            out.append((True, cjk_run[0]))
        elif cjk_run:
            out.extend((True, cjk_run[i] + cjk_run[i + 1]) for i in range(len(cjk_run) - 1))
        cjk_run.clear()

    def flush_word() -> None:
        if word_run:
            out.append((False, "".join(word_run).lower()[:MAX_TOKEN_CHARS]))
            word_run.clear()

    for ch in unicodedata.normalize("NFKC", text):
        if is_cjk(ch):
            flush_word()
            cjk_run.append(ch)
        elif _is_word_char(ch) or (word_run and _is_mark(ch)):
            flush_cjk()
            word_run.append(ch)
        else:
            flush_cjk()
            flush_word()
    flush_cjk()
    flush_word()
    return out


def split_tokens(text: str) -> tuple[list[str], list[str]]:
    """Tokenize `text` into (cjk_terms, words), each in order of appearance (duplicates kept).

    A CJK run of one character yields that character; a longer run yields every overlapping bigram.
    A run of other letters/digits yields one lowercased word. Anything else ends both runs; a CJK
    character ends a word run and a word character ends a CJK run.
    """
    scanned = _scan(text)
    return [t for c, t in scanned if c], [t for c, t in scanned if not c]


def tokens(text: str) -> list[str]:
    """All tokens of `text` in order of appearance (CJK bigrams/singles and lowercased words)."""
    return [t for _, t in _scan(text)]


def projection(title: str | None, content: str | None) -> str:
    """Index-side `lexical_text`: for title then content, that part's CJK terms, then its words.

    Store the result on every upsert and index it as `to_tsvector('simple', lexical_text)`.
    """
    parts: list[str] = []
    seen: set[str] = set()
    unique_bytes = 0
    for part in (title, content):
        if not part:
            continue
        cjk_terms, words = split_tokens(part)
        for tok in (*cjk_terms, *words):
            if tok not in seen:
                size = len(tok.encode("utf-8"))
                if unique_bytes + size > _MAX_PROJECTION_UNIQUE_BYTES:
                    continue  # a new distinct lexeme would risk tsvector's 1 MB limit
                seen.add(tok)
                unique_bytes += size
            parts.append(tok)
    return " ".join(parts)


def quote(token: str) -> str:
    """Quote one token as a tsquery operand: `'…'` with `'` doubled and `\\` doubled."""
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def _dedupe(items: list[str], cap: int) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        if item and item not in seen:
            seen.add(item)
            out.append(item)
            if len(out) >= cap:
                break
    return out


def tsquery(query: str | None) -> str | None:
    """Query-side tsquery text for `to_tsquery('simple', …)`, or None when the query has no tokens.

    Shape: `( 'b1' | 'b2' | … ) & 'w1' & 'w2'` — one OR-group of all CJK terms (parentheses only when
    it has more than one), AND-ed with every word. None means: skip the lexical leg.
    """
    if not query:
        return None
    cjk_terms, words = split_tokens(query)
    cjk_terms = _dedupe(cjk_terms, MAX_QUERY_CJK_TERMS)
    words = _dedupe(words, MAX_QUERY_WORDS)
    clauses: list[str] = []
    if len(cjk_terms) == 1:
        clauses.append(quote(cjk_terms[0]))
    elif cjk_terms:
        clauses.append("( " + " | ".join(quote(t) for t in cjk_terms) + " )")
    clauses.extend(quote(w) for w in words)
    if not clauses:
        return None
    return " & ".join(clauses)


def search_tokens(query: str | None) -> list[str]:
    """Query-side tokens for the ranked leg (``retrieval_bm25_search``, migrations/0084), in order of first
    appearance, de-duplicated and capped. The database stems them and drops stop words with the same english
    configuration that built each row's ``search_tsv`` from its projection, so index and query agree."""
    return _dedupe(tokens(query), MAX_SEARCH_TOKENS) if query else []
