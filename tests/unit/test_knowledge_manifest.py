"""KNOWLEDGE.yaml parsing (safe loader) and document selection."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmate.core.errors import ValidationFailed
from agentmate.knowledge.manifest import parse_manifest


def test_a_full_manifest_parses():
    m = parse_manifest("""
name: Product FAQ
description: Answers for support
profile: faq
language: en
capabilities: [billing, refunds]
languages: [en, zh]
include: ["docs/**", "*.md"]
exclude: ["docs/drafts/**"]
citation_policy: required
""")
    assert (m.name, m.capabilities, m.languages, m.citation_policy) == (
        "Product FAQ",
        ["billing", "refunds"],
        ["en", "zh"],
        "required",
    )
    assert m.selects("docs/a/b.md") and m.selects("README.md")
    assert not m.selects("docs/drafts/x.md")
    assert not m.selects("src/a.md")  # '*.md' is root-level only; '**/*.md' reaches every folder
    assert not m.selects("KNOWLEDGE.yaml")


def test_without_include_every_file_but_the_manifest_is_a_document():
    m = parse_manifest("name: x\nexclude: ['**/*.png']\n")
    assert m.selects("a/b/c.md") and not m.selects("img/a/logo.png") and not m.selects("KNOWLEDGE.yaml")


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (None, "KNOWLEDGE.yaml"),
        ("description: no name\n", "KNOWLEDGE.yaml.name"),
        ("- a list\n", "KNOWLEDGE.yaml"),
        ("name: [unclosed\n", "KNOWLEDGE.yaml"),
        ("name: x\ncitation_policy: sometimes\n", "KNOWLEDGE.yaml.citation_policy"),
        (
            "name: x\ncapabilities: [" + ", ".join(f"c{i}" for i in range(17)) + "]\n",
            "KNOWLEDGE.yaml.capabilities",
        ),
        ("name: x\nlanguages: [" + ", ".join(f"l{i}" for i in range(17)) + "]\n", "KNOWLEDGE.yaml.languages"),
        ("name: x\ntags: [a]\n", "KNOWLEDGE.yaml.tags"),
        ("name: x\ninclude: ['/etc/**']\n", "KNOWLEDGE.yaml.include.0"),
    ],
)
def test_invalid_manifests_name_the_field(text, field):
    with pytest.raises(ValidationFailed) as err:
        parse_manifest(text)
    assert err.value.errors[0].field == field


def test_the_safe_loader_builds_no_python_objects_and_aliases_are_refused():
    with pytest.raises(ValidationFailed):
        parse_manifest("name: !!python/object/apply:os.system ['echo hacked']\n")
    bomb = "a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nname: *b\n"
    with pytest.raises(ValidationFailed, match="anchors and aliases"):
        parse_manifest(bomb)
    with pytest.raises(ValidationFailed, match="larger than"):
        parse_manifest("name: x\ndescription: " + "y" * 70_000 + "\n")


# -- issue 20: hostile values --------------------------------------------------------------------------------------

HOSTILE_SCALARS = [
    ("description: 2024-13-45\n", "description"),
    ("description: !!int 0x\n", "description"),
    ("description: !!float abc\n", "description"),
    ("description: " + "9" * 5000 + "\n", "description"),
    ("description: !!bool maybe\n", "description"),
    ("capabilities: [a, !!timestamp 2024-02-30]\n", "capabilities.1"),
    ("2024-13-45: x\n", "2024-13-45"),
    ("description: !!python/name:os.system\n", "description"),
]


@pytest.mark.parametrize(("line", "field"), HOSTILE_SCALARS)
def test_a_value_the_yaml_constructor_refuses_is_a_400_naming_its_field(line, field):
    with pytest.raises(ValidationFailed) as err:
        parse_manifest("name: x\n" + line)
    assert err.value.errors[0].field == f"KNOWLEDGE.yaml.{field}"
    assert (
        "Traceback" not in err.value.errors[0].message
        and "invalid literal" not in err.value.errors[0].message
    )


def test_deep_nesting_is_refused_before_construction_recurses():
    with pytest.raises(ValidationFailed, match="nested deeper"):
        parse_manifest("name: x\ndescription: " + "[" * 500 + "]" * 500 + "\n")


def test_capability_and_language_items_are_1_to_64_characters():
    with pytest.raises(ValidationFailed) as err:
        parse_manifest("name: x\ncapabilities: [ok, '" + "c" * 65 + "']\n")
    assert err.value.errors[0].field == "KNOWLEDGE.yaml.capabilities.1"
    with pytest.raises(ValidationFailed) as err:
        parse_manifest("name: x\ncapabilities: ['']\n")
    assert err.value.errors[0].field == "KNOWLEDGE.yaml.capabilities.0"
    with pytest.raises(ValidationFailed) as err:
        parse_manifest("name: x\nlanguages: [en, '" + "l" * 65 + "']\n")
    assert err.value.errors[0].field == "KNOWLEDGE.yaml.languages.1"
    assert parse_manifest("name: x\ncapabilities: ['" + "c" * 64 + "']\n").capabilities == ["c" * 64]


def test_glob_limits_name_the_pattern_past_them():
    over = "*" * 257
    with pytest.raises(ValidationFailed) as err:
        parse_manifest(f"name: x\ninclude: ['docs/**', '{over}']\n")
    assert err.value.errors[0].field == "KNOWLEDGE.yaml.include.1"
    with pytest.raises(ValidationFailed) as err:
        parse_manifest("name: x\ninclude: [" + ", ".join(f"'d{i}/**'" for i in range(65)) + "]\n")
    assert err.value.errors[0].field == "KNOWLEDGE.yaml.include"
    # 4,096 characters across include and exclude: the 17th 256-character glob is one too many
    globs = ", ".join(f"'{i:03d}" + "*" * 253 + "'" for i in range(8))
    with pytest.raises(ValidationFailed) as err:
        parse_manifest(f"name: x\ninclude: [{globs}]\nexclude: [{globs}, 'x']\n")
    assert err.value.errors[0].field == "KNOWLEDGE.yaml.exclude.8"
    assert len(parse_manifest(f"name: x\ninclude: [{globs}]\nexclude: [{globs}]\n").exclude) == 8


def test_the_pathological_glob_of_issue_20_answers_without_backtracking():
    m = parse_manifest("name: x\ninclude: ['*a*a*a*a*a*a*a*ab']\n")
    assert not m.selects("a" * 60) and m.selects("a" * 60 + "b")


_YAMLISH = st.text(alphabet=st.sampled_from(list("abn:-[]{}!&*?|>#'\"\n 0123456789.,+e_x%@`\t")), max_size=80)


@settings(max_examples=1000, deadline=None)
@given(
    st.one_of(
        _YAMLISH,
        st.text(max_size=80),
        st.builds(
            lambda t, v: f"name: x\n{t}: {v}\n",
            st.sampled_from(["description", "capabilities", "include", "profile", "x"]),
            st.one_of(
                _YAMLISH.map(lambda s: s.replace("\n", " ")),
                st.sampled_from(
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
                    ]
                ),
            ),
        ),
    )
)
def test_any_yaml_text_yields_a_manifest_or_a_field_error(text):
    try:
        manifest = parse_manifest(text)
    except ValidationFailed as exc:
        assert exc.errors and all(e.field.startswith("KNOWLEDGE.yaml") for e in exc.errors)
    else:
        assert manifest.name
        manifest.selects("docs/a.md")
