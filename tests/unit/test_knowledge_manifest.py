"""KNOWLEDGE.yaml parsing (safe loader) and document selection."""

from __future__ import annotations

import pytest

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
        "Product FAQ", ["billing", "refunds"], ["en", "zh"], "required")
    assert m.selects("docs/a/b.md") and m.selects("README.md")
    assert not m.selects("docs/drafts/x.md")
    assert not m.selects("src/a.md")  # '*.md' is root-level only; '**/*.md' reaches every folder
    assert not m.selects("KNOWLEDGE.yaml")


def test_without_include_every_file_but_the_manifest_is_a_document():
    m = parse_manifest("name: x\nexclude: ['**/*.png']\n")
    assert m.selects("a/b/c.md") and not m.selects("img/a/logo.png") and not m.selects("KNOWLEDGE.yaml")


@pytest.mark.parametrize(("text", "field"), [
    (None, "KNOWLEDGE.yaml"),
    ("description: no name\n", "KNOWLEDGE.yaml.name"),
    ("- a list\n", "KNOWLEDGE.yaml"),
    ("name: [unclosed\n", "KNOWLEDGE.yaml"),
    ("name: x\ncitation_policy: sometimes\n", "KNOWLEDGE.yaml.citation_policy"),
    ("name: x\ncapabilities: [" + ", ".join(f"c{i}" for i in range(17)) + "]\n", "KNOWLEDGE.yaml.capabilities"),
    ("name: x\nlanguages: [" + ", ".join(f"l{i}" for i in range(17)) + "]\n", "KNOWLEDGE.yaml.languages"),
    ("name: x\ntags: [a]\n", "KNOWLEDGE.yaml.tags"),
    ("name: x\ninclude: ['/etc/**']\n", "KNOWLEDGE.yaml.include.0"),
])
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
