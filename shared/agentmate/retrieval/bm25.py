"""The lexical leg's ranking rules for text that is not in the index (the context pack's FACTS layer: live todos
and notes, read on every pack, never indexed): the same tokenizer (``lexical.tokens``), the same term rules as
``search_tsv`` (migrations/0084) and the same BM25 as ``retrieval_bm25_search``.

Term rules, as Postgres' english configuration applies them to a projection's tokens: a token with a digit or a
CJK character is kept as it is (the parser routes numbers and number-words to the `simple` dictionary, and CJK
bigrams pass the stemmer unchanged); any other word is dropped when it is an English stop word (Postgres'
``english.stop``, the list below) and otherwise stemmed with Snowball's English stemmer, the algorithm of
Postgres' ``english_stem``.

Ranking: BM25 with binary term frequency, k1 = 1.2, b = 0.75, document length in distinct terms against the
candidates' mean, and each term's inverse document frequency among the candidates given.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from agentmate.retrieval import lexical

__all__ = ["STOP_WORDS", "Ranked", "probes", "rank", "terms"]

K1 = 1.2
B = 0.75
MAX_QUERY_TERMS = 16  # as retrieval_bm25_search

# Postgres 15 tsearch_data/english.stop (the english configuration's stop words).
STOP_WORDS = frozenset(
    """
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself it
its itself they them their theirs themselves what which who whom this that these those am is are was were be been
being have has had having do does did doing a an the and but if or because as until while of at by for with about
against between into through during before after above below to from up down in out on off over under again further
then once here there when where why how all any both each few more most other some such no nor not only own same so
than too very s t can will just don should now
""".split()
)


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import snowballstemmer  # type: ignore[import-untyped]  # lazily: only the context pack ranks text outside the index

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def _term(token: str) -> str | None:
    if any(ch.isdecimal() for ch in token) or lexical.is_cjk(token[0]):
        return token
    if token in STOP_WORDS:
        return None
    return str(_stemmer().stemWord(token))


def terms(text: str | None) -> list[str]:
    """The distinct terms of ``text`` in order of first appearance (stop words gone, words stemmed)."""
    seen: dict[str, None] = {}
    for token in lexical.tokens(text or ""):
        term = _term(token)
        if term is not None:
            seen.setdefault(term, None)
    return list(seen)


def probes(query_terms: Sequence[str]) -> list[str]:
    """Lowercase substrings a text holding a term must contain, for a cheap SQL prefilter before ``rank``: the term
    itself, or for a stem that ends in the ``i``/``e`` Snowball writes for a ``y``/dropped ``e`` (``happi`` for
    happy, ``agre`` for agreed), the stem without it. The prefilter lets through texts that ``rank`` drops; it can
    miss one only where a stem is not a prefix of the inflected word (``die`` for dying) or the text needs NFKC
    folding (full-width letters)."""
    out: dict[str, None] = {}
    for term in query_terms[:MAX_QUERY_TERMS]:
        probe = term[:-1] if len(term) > 3 and term[-1] in "ie" and term.isalpha() else term
        out.setdefault(probe, None)
    return list(out)


@dataclass(frozen=True, slots=True)
class Ranked:
    index: int  # position in the texts given
    score: float  # BM25
    coverage: float  # share of the query's terms the text holds


def rank(query_terms: Sequence[str], texts: Sequence[str]) -> list[Ranked]:
    """The texts holding at least one query term, best BM25 first (ties: the earlier text first)."""
    wanted = list(dict.fromkeys(query_terms))[:MAX_QUERY_TERMS]
    if not wanted or not texts:
        return []
    doc_terms = [set(terms(t)) for t in texts]
    n = len(texts)
    df = {t: sum(1 for d in doc_terms if t in d) for t in wanted}
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in wanted}
    mean_len = max(sum(len(d) for d in doc_terms) / n, 1.0)
    out = []
    for i, d in enumerate(doc_terms):
        matched = [t for t in wanted if t in d]
        if not matched:
            continue
        weight = sum(idf[t] for t in matched)
        score = weight * (K1 + 1) / (1 + K1 * (1 - B + B * len(d) / mean_len))
        out.append(Ranked(i, score, len(matched) / len(wanted)))
    out.sort(key=lambda r: (-r.score, r.index))
    return out
