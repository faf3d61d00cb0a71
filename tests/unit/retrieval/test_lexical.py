# ruff: noqa: RUF001  (full-width and CJK characters are the point of these tests)
import random
import re

import pytest

from agentmate.retrieval.lexical import (
    MAX_QUERY_CJK_TERMS,
    MAX_QUERY_WORDS,
    MAX_TOKEN_CHARS,
    is_cjk,
    projection,
    quote,
    split_tokens,
    tokens,
    tsquery,
)

# Characters that mean something to to_tsquery or to SQL, plus awkward Unicode.
NASTY_PIECES = [
    "&",
    "|",
    "!",
    "(",
    ")",
    ":",
    "*",
    "<",
    ">",
    "<->",
    "<2>",
    "'",
    "''",
    '"',
    "\\",
    "\\'",
    "'\\",
    ":*",
    ":A",
    ":*AB",
    "!!",
    "&&",
    "||",
    "()",
    ")(",
    "-",
    "_",
    ".",
    ",",
    ";",
    "--",
    "/*",
    "*/",
    "%",
    "$$",
    "\x00",
    "\t",
    "\n",
    "\r",
    " ",
    "\u00a0",
    "\u200b",
    "\u3000",
    "\ufeff",
    "😀",
    "👍🏽",
    "🇨🇳",
    "\u0301",
    "e\u0301",
    "ß",
    "İ",
    "ǅ",
    "Ω",
    "ﬁ",
    "Ｆｕｌｌ",
    "①",
    "²",
    "٣",
    "१२",
    "न्दी",
    "ไทย",
    "知",
    "知识库",
    "检索增强",
    "ラーメン",
    "ｶﾀｶﾅ",
    "한국어",
    "々",
    "〇",
    "𠀋",
    "中a文",
    "a中b",
    "x" * 300,
    "abc",
    "ABC",
    "select",
    "or",
    "and",
    "not",
    "null",
    "1",
    "123",
    "0x1F",
    "v2.0",
]


def random_nasty(rng: random.Random) -> str:
    n = rng.randint(0, 12)
    return "".join(
        rng.choice(NASTY_PIECES) if rng.random() < 0.8 else chr(rng.randint(1, 0x10FFFF)) for _ in range(n)
    ).replace("\ud800", "")


QUOTED = r"'(?:[^'\\]|''|\\\\)+'"
OPERAND = rf"(?:{QUOTED}|\( {QUOTED}(?: \| {QUOTED})+ \))"
TSQUERY_GRAMMAR = re.compile(rf"^{OPERAND}(?: & {QUOTED})*$")


def test_is_cjk_covers_han_kana_hangul_and_nothing_else() -> None:
    for ch in "知識库々〇ひらがなカタカナーｶ한국𠀋":
        assert is_cjk(ch), ch
    for ch in "aZ9é_- .,!Ωж١😀\u3000、。「」，ab":
        assert not is_cjk(ch), ch
    assert not is_cjk("")
    assert not is_cjk("知识")


def test_cjk_runs_become_overlapping_bigrams_and_a_lone_char_stays_single() -> None:
    assert tokens("知识库") == ["知识", "识库"]
    assert tokens("知") == ["知"]
    assert tokens("知识") == ["知识"]
    assert tokens("我 爱") == ["我", "爱"]
    assert tokens("검색 엔진") == ["검색", "엔진"]


def test_words_are_lowercased_and_split_on_anything_not_letter_or_digit() -> None:
    assert tokens("pax_global_header") == ["pax", "global", "header"]
    assert tokens("Hello, World! v2.0 x-y") == ["hello", "world", "v2", "0", "x", "y"]
    assert tokens("Ünïcödé Straße") == ["ünïcödé", "straße"]
    assert tokens("😀 ¡¿ ---") == []
    assert tokens("") == []


def test_cjk_and_word_runs_end_each_other() -> None:
    assert tokens("API接口文档v2") == ["api", "接口", "口文", "文档", "v2"]
    assert split_tokens("Redis缓存策略 guide") == (["缓存", "存策", "策略"], ["redis", "guide"])


def test_nfkc_folds_full_width_and_combining_marks_stay_in_the_word() -> None:
    assert tokens("ＡＰＩ　Ｋｅｙ") == ["api", "key"]
    assert tokens("cafe\u0301") == tokens("café") == ["café"]
    assert tokens("ﬁle") == ["file"]
    assert tokens("ラーメン") == ["ラー", "ーメ", "メン"]


def test_very_long_words_are_cut() -> None:
    assert tokens("a" * 5000) == ["a" * MAX_TOKEN_CHARS]


def test_projection_lists_each_parts_cjk_terms_then_words() -> None:
    assert projection("知识库 Guide", "Hello 世界, pax_global_header") == (
        "知识 识库 guide 世界 hello pax global header"
    )
    assert projection(None, "x") == "x"
    assert projection("", "") == ""
    assert projection(None, None) == ""


def test_projection_stays_under_the_tsvector_size_limit() -> None:
    huge = " ".join(f"w{i:07d}x{'y' * 50}" for i in range(20000))  # about 1.2 MB of distinct words
    proj = projection("t", huge)
    assert len(set(proj.split())) < 20001
    assert sum(len(t.encode()) for t in set(proj.split())) <= 900_000


def test_tsquery_ors_the_cjk_terms_and_ands_each_word() -> None:
    assert tsquery("知识库 检索 Hello O'Brien") == "( '知识' | '识库' | '检索' ) & 'hello' & 'o' & 'brien'"
    assert tsquery("知") == "'知'"
    assert tsquery("redis") == "'redis'"
    assert tsquery("redis 缓存") == "'缓存' & 'redis'"


def test_tsquery_is_none_without_tokens() -> None:
    for q in ["", "   ", "!!!", "&|!():*<>'\"\\", "😀", None]:
        assert tsquery(q) is None


def test_tsquery_dedupes_and_caps_terms() -> None:
    assert tsquery("a a A b") == "'a' & 'b'"
    words = " ".join(f"w{i}" for i in range(500))
    assert tsquery(words).count("&") == MAX_QUERY_WORDS - 1
    cjk = "".join(chr(0x4E00 + i) for i in range(500))
    assert tsquery(cjk).count("|") == MAX_QUERY_CJK_TERMS - 1


def test_quote_doubles_quotes_and_backslashes() -> None:
    assert quote("o'brien") == "'o''brien'"
    assert quote("a\\b") == "'a\\\\b'"


def test_every_query_ever_built_matches_the_safe_grammar() -> None:
    # Property-style: whatever the input, the output is None or fits the quoted-operand grammar,
    # so to_tsquery can never see a dangling operator, an unbalanced quote or a raw metacharacter.
    rng = random.Random(20261130)
    inputs = [*NASTY_PIECES, "".join(NASTY_PIECES)] + [random_nasty(rng) for _ in range(3000)]
    for text in inputs:
        q = tsquery(text)
        if q is None:
            assert tokens(text) == []
            continue
        assert TSQUERY_GRAMMAR.match(q), (text, q)
        for tok in re.findall(r"'((?:[^'\\]|''|\\\\)+)'", q):
            raw = tok.replace("''", "'").replace("\\\\", "\\")
            assert raw in tokens(text)
        projection(text, text)  # never raises either


def test_the_query_of_a_text_is_built_from_its_own_projection_tokens() -> None:
    # Index side and query side share one tokenizer: every query term appears in the projection.
    text = "知识库检索 uses pax_global_header and ＡＰＩ keys"
    proj_tokens = set(projection("", text).split())
    for term in re.findall(r"'((?:[^']|'')+)'", tsquery(text) or ""):
        assert term in proj_tokens


@pytest.mark.parametrize("text", ["a'b", "it's", "x\\'y"])
def test_quotes_never_appear_inside_tokens(text: str) -> None:
    assert all("'" not in t and "\\" not in t for t in tokens(text))


def test_ascii_fast_path_tokenizes_exactly_as_the_character_loop() -> None:
    from agentmate.retrieval.lexical import _scan, _scan_chars

    rng = random.Random(3)
    alphabet = "abcXYZ019 _-'\\\t\n.,;:!?()[]{}#*`~^|/<>\"@$%&+=\x00\x7f"
    cases = [
        "",
        " ",
        "a",
        "Hello, World!",
        "snake_case and kebab-case",
        "v1.2.3 x86_64",
        "x" * (MAX_TOKEN_CHARS + 9),
    ]
    cases += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))) for _ in range(500)]
    for text in cases:
        assert text.isascii()
        assert _scan(text) == _scan_chars(text), text
