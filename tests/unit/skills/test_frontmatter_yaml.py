"""Issue 20: a SKILL.md frontmatter value PyYAML's constructors refuse (ValueError, KeyError, … rather than
YAMLError) is a problem naming its key, in the parser, the compiler and the quality lint; never an exception."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmate.skills.compile import compiler, frontmatter
from agentmate.skills.quality import checks as quality
from tests.unit.skills import pkg

HOSTILE = [
    ("description: 2024-13-45", "description:"),
    ("description: !!int 0x", "description:"),
    ("description: !!float abc", "description:"),
    ("description: " + "9" * 5000, "description:"),
    ("description: !!bool maybe", "description:"),
    ("triggers: [a, !!timestamp 2024-02-30]", "triggers.1:"),
    ("knowledge:\n  requirements:\n    - id: !!int 0x", "knowledge.requirements.0.id:"),
]


def skill(front: str) -> str:
    return f"---\nname: domain-web\n{front}\n---\nbody\n"


@pytest.mark.parametrize(("front", "problem"), HOSTILE)
def test_the_parser_names_the_key_strict_or_not(front, problem):
    for strict in (True, False):
        with pytest.raises(frontmatter.FrontmatterError) as exc:
            frontmatter.parse(skill(front), strict=strict)
        assert exc.value.problems[0].startswith(problem), exc.value.problems
        # the line in SKILL.md: after "---" and "name: …", on the front's last line
        assert "invalid literal" not in exc.value.problems[0]
        assert f"(line {3 + front.count(chr(10))})" in exc.value.problems[0]


@pytest.mark.parametrize(("front", "problem"), HOSTILE)
def test_the_compiler_reports_a_compile_error_naming_the_key(front, problem):
    content = skill(front)
    with pytest.raises(compiler.CompileError) as exc:
        compiler.compile_version(
            compiler.VersionIn(
                id="v", skill_name="domain-web", version="1", content=content, package_hash=None
            ),
            [pkg.text_file("s", "SKILL.md", content)],
        )
    assert exc.value.problems[0].startswith(problem)


def test_the_quality_lint_fails_frontmatter_valid_with_the_problem():
    report = quality.evaluate(
        pkg.package(skill("description: 2024-13-45")),
        baseline=None,
        logs=[],
        cutoff=datetime(2026, 6, 1, tzinfo=UTC),
    )
    check = next(c for c in report["lint"] if c["id"] == "frontmatter_valid")
    assert check["applicable"] and not check["passed"]
    assert check["evidence"]["problems"][0].startswith("description: is not a valid YAML timestamp")


_FRONT = st.text(alphabet=st.sampled_from(list("abn:-[]{}!&*?|>#'\"\n 0123456789.,+e_x%@`\t")), max_size=80)
_VALUES = st.sampled_from(
    [
        "!!int 0x",
        "!!float abc",
        "2024-13-45",
        "!!bool maybe",
        "!!binary '@@'",
        "!!set {a}",
        "!!omap [a]",
        "[!!timestamp x]",
        "{[a]: 1}",
        "!foo x",
        "9" * 4400,
        "[[[[[[[[[1]]]]]]]]]",
    ]
)


@settings(max_examples=800, deadline=None)
@given(
    st.one_of(
        _FRONT,
        st.text(max_size=80),
        st.builds(
            lambda k, v: f"{k}: {v}",
            st.sampled_from(
                ["name", "description", "triggers", "metadata", "knowledge", "allowed-tools", "x"]
            ),
            _VALUES,
        ),
    )
)
def test_any_frontmatter_text_yields_a_frontmatter_or_a_frontmatter_error(front):
    content = f"---\n{front}\n---\nbody\n"
    try:
        fm = frontmatter.parse(content, strict=False)
    except frontmatter.FrontmatterError as exc:
        assert exc.problems and all(isinstance(p, str) and p for p in exc.problems)
    else:
        assert fm.present
    try:
        compiler.compile_version(
            compiler.VersionIn(id="v", skill_name="s", version="1", content=content, package_hash=None), []
        )
    except compiler.CompileError as exc:
        assert exc.problems
