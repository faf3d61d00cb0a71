"""The linear-time glob matcher: the same answers as the regex translation it replaced, within a step bound."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from agentmate.packages.globs import STEPS_PER_CHAR, GlobSet


def old_regex(pattern: str) -> re.Pattern[str]:
    """The translation manifest.py used before (kept here as the reference semantics)."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("^" + "".join(out) + "(?:/.*)?$")


def matches(pattern: str, path: str) -> bool:
    return GlobSet([pattern]).match(path)[0]


def test_the_documented_forms():
    assert matches("docs/**", "docs/a/b.md") and matches("docs", "docs/a/b.md") and matches("docs", "docs")
    assert not matches("docs", "docsx/a.md")
    assert matches("*.md", "README.md") and not matches("*.md", "src/a.md")
    assert matches("**/*.md", "src/a.md") and matches("**/*.md", "a.md") and not matches("**/*.md", "a.mdx")
    assert matches("a?c", "abc") and not matches("a?c", "a/c")
    assert matches("a**b", "a/x/b") and matches("**.png", "img/a/logo.png")
    assert matches("**/drafts/**", "docs/drafts/x.md") and not matches("**/drafts/**", "docs/draft/x.md")


def test_groups_answer_separately():
    globs = GlobSet(["docs/**", "*.md"], ["docs/drafts/**"])
    assert globs.match("docs/drafts/x.md") == [True, True]
    assert globs.match("README.md") == [True, False]
    assert globs.match("src/a.md") == [False, False]
    assert GlobSet([], []).match("a") == [False, False]


def test_the_pathological_pattern_of_issue_20_is_linear():
    # '*a*a*a*a*a*a*a*ab' against 60 'a's took 47 s with re (each '*a' multiplies the time by about 8)
    pattern = "*a" * 7 + "*ab"
    globs = GlobSet([pattern])
    path = "a" * 60
    assert globs.match(path) == [False] and old_regex(pattern).match("a" * 12) is None
    assert globs.steps <= GlobSet.max_steps(path)
    # The worst case the limits allow: 128 patterns of 256 characters against a 512-character path
    worst = GlobSet([("*a" * 127 + "b")[:256]] * 64, [("**a?" * 64)[:255] + "b"] * 64)
    long_path = "/".join(["a" * 255, "a" * 256])
    assert worst.match(long_path) == [False, False]
    assert worst.steps <= GlobSet.max_steps(long_path) == 513 * STEPS_PER_CHAR
    assert worst.width < 128 * (256 + 3) + 1


_ALPHABET = st.sampled_from("ab/.*?")
_PATTERN = st.text(alphabet=st.sampled_from("ab/.*?"), min_size=1, max_size=10)
_PATH = st.text(alphabet=st.sampled_from("ab/."), max_size=12)


@settings(max_examples=1500, deadline=None)
@given(_PATTERN, _PATH)
def test_agrees_with_the_old_regex(pattern, path):
    assert matches(pattern, path) == bool(old_regex(pattern).match(path))


@settings(max_examples=300, deadline=None)
@given(st.lists(_PATTERN, max_size=6), st.lists(_PATTERN, max_size=6), _PATH)
def test_a_set_agrees_with_its_patterns_one_by_one(include, exclude, path):
    assert GlobSet(include, exclude).match(path) == [
        any(old_regex(p).match(path) for p in include),
        any(old_regex(p).match(path) for p in exclude),
    ]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text(alphabet=st.sampled_from("a/*?b"), min_size=1, max_size=40), min_size=1, max_size=8),
    st.text(alphabet=st.sampled_from("ab/"), max_size=200),
)
def test_steps_are_bounded_by_the_path_length(patterns, path):
    globs = GlobSet(patterns)
    globs.match(path)
    assert globs.steps <= (len(path) + 1) * STEPS_PER_CHAR
