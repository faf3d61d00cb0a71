import json

import pytest

from agentmate.skills.compile import compiler, frontmatter, knowledge_contract
from tests.unit.skills import pkg


def compile_files(files, skill=pkg.SKILL):
    return compiler.compile_version(compiler.VersionIn("v1", "domain-web", "1.0.0", skill, "a" * 64), files)


def test_same_package_compiles_to_the_same_bytes_whatever_the_file_order() -> None:
    # Given one package's files in two orders
    files = pkg.files()
    # When both are compiled
    forward = compile_files(files)
    backward = compile_files(list(reversed(files)))
    # Then the canonical encodings are byte-identical
    assert compiler.canonical_json(forward.as_dict()) == compiler.canonical_json(backward.as_dict())
    assert forward.artifact_hash == backward.artifact_hash


def test_l0_card_carries_routing_metadata_but_never_instructions_or_resource_bodies() -> None:
    art = compile_files(pkg.files())
    encoded = compiler.canonical_json(art.card)
    assert art.card["name"] == "domain-web"
    assert art.card["triggers"] == ["build a web service", "add an http route"]
    assert art.card["capabilities"] == ["fastapi", "http-api"]
    assert art.card["allowed_tools"] == ["Read", "Bash(git:*)"]
    assert art.card["knowledge"] == {"mode": "discover", "requirement_ids": ["api-docs"]}
    assert art.card["resource_count"] == 3 and art.card["text_resource_count"] == 2
    assert "Write each route handler thin" not in encoded
    assert "Routes are declared" not in encoded
    assert '"content"' not in encoded and '"instructions"' not in encoded


def test_l1_is_the_body_after_the_frontmatter() -> None:
    art = compile_files(pkg.files())
    assert art.instructions.startswith("# Instructions")
    assert "name: domain-web" not in art.instructions


def test_l2_manifest_lists_every_file_but_skill_md_with_kind_mime_and_text_availability() -> None:
    art = compile_files(pkg.files())
    assert [
        (m["path"], m["kind"], m["mime_type"], m["indexable"], m["text_available"])
        for m in art.resource_manifest
    ] == [
        ("assets/logo.png", "asset", "image/png", False, False),
        ("references/routing.md", "reference", "text/markdown", True, True),
        ("scripts/check.py", "script", "text/x-python", True, True),
    ]
    assert all("content" not in m for m in art.resource_manifest)


def test_public_format_only_skill_is_valid_and_has_no_contract() -> None:
    skill = "---\nname: plain\ndescription: Only public keys\n---\nDo it.\n"
    art = compile_files([pkg.text_file("s", "SKILL.md", skill)], skill)
    assert art.knowledge_contract is None
    assert art.knowledge_contract_identity == "knowledge=none"
    assert frontmatter.public_only(frontmatter.parse(skill))


@pytest.mark.parametrize(
    ("front", "problem"),
    [
        ("name: " + "a" * 65, "name: longer than 64"),
        ("name: Not_Valid", "name: only lowercase"),
        ("description: " + "d" * 1025, "description: longer than 1024"),
        ("compatibility: " + "c" * 501, "compatibility: longer than 500"),
        ("metadata: {a: 1}", "metadata: must map strings to strings"),
        ("triggers: {a: b}", "triggers: must be a list of strings"),
        ("a: &x [1]\nb: *x", "anchors and aliases"),
        ("- just\n- a list", "must be a YAML mapping"),
        ("name: [unclosed", "frontmatter:"),
        ("knowledge:", "knowledge: is empty"),
        ("knowledge:\n  requirements: []", "knowledge: requirements: at least one"),
    ],
)
def test_invalid_frontmatter_is_a_compile_error_naming_the_problem(front: str, problem: str) -> None:
    skill = f"---\n{front}\n---\nbody\n"
    with pytest.raises(compiler.CompileError) as exc:
        compile_files([pkg.text_file("s", "SKILL.md", skill)], skill)
    assert any(problem in p for p in exc.value.problems), exc.value.problems


def test_unterminated_frontmatter_is_a_compile_error() -> None:
    with pytest.raises(compiler.CompileError, match="no closing"):
        compile_files([], "---\nname: x\nbody without end\n")


def test_frontmatter_larger_than_the_bound_is_refused_not_truncated() -> None:
    skill = "---\ndescription: x\n" + "# pad\n" * 20_000 + "---\nbody"
    with pytest.raises(compiler.CompileError, match="larger than"):
        compile_files([], skill)


def test_knowledge_contract_is_normalised_with_defaults_and_a_stable_identity() -> None:
    raw = {
        "requirements": [
            {"id": "B", "match": {"domains": ["Product", "product"]}},
            {
                "id": "a",
                "required": True,
                "purpose": "docs",
                "match": {"capabilities": ["faq"]},
                "retrieval": {"max_knowledge_bases": 2},
            },
        ]
    }
    contract = knowledge_contract.parse(raw)
    assert [r["id"] for r in contract["requirements"]] == ["a", "B"]
    a, b = contract["requirements"]
    assert a["retrieval"] == {
        "max_knowledge_bases": 2,
        "top_k_per_base": 8,
        "freshness": "active",
        "citations": "required",
    }
    assert a["fallback"] == {"on_no_match": "ask_user", "on_ambiguous": "search_multiple"}
    assert b["fallback"]["on_no_match"] == "proceed_without_knowledge"
    assert b["match"]["domains"] == ["Product"]
    reordered = knowledge_contract.parse({"requirements": list(reversed(raw["requirements"]))})
    assert knowledge_contract.identity(contract) == knowledge_contract.identity(reordered)
    assert knowledge_contract.identity(contract).startswith("mode=discover;req(a,required=true,cap=faq")


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"mode": "guess", "requirements": [{"id": "a", "match": {"domains": ["x"]}}]}, "mode"),
        ({"requirements": [{"match": {"domains": ["x"]}}]}, ".id: required"),
        ({"requirements": [{"id": "a"}]}, "needs at least one of capabilities"),
        (
            {
                "requirements": [
                    {"id": "a", "match": {"domains": ["x"]}, "retrieval": {"max_knowledge_bases": 11}}
                ]
            },
            "platform ceiling",
        ),
        (
            {
                "requirements": [
                    {
                        "id": "a",
                        "required": True,
                        "match": {"domains": ["x"]},
                        "fallback": {"on_no_match": "proceed_without_knowledge"},
                    }
                ]
            },
            "required but falls back",
        ),
        (
            {
                "requirements": [
                    {"id": "a", "match": {"domains": ["x"]}, "fallback": {"on_ambiguous": "guess"}}
                ]
            },
            "on_ambiguous",
        ),
        ({"mode": "pinned", "requirements": [{"id": "a"}]}, "at least one pinned"),
        (
            {"requirements": [{"id": "a", "match": {"domains": ["x"]}, "pinned": [{"source_name": "s"}]}]},
            "pinning belongs to mode pinned",
        ),
        (
            {"mode": "scoped_discover", "requirements": [{"id": "a", "match": {"domains": ["x"]}}]},
            "needs a scope",
        ),
        (
            {
                "requirements": [
                    {"id": "a", "match": {"domains": ["x"]}},
                    {"id": "A", "match": {"domains": ["y"]}},
                ]
            },
            "unique",
        ),
        ({"requirements": [{"id": "a", "match": {"domains": ["x"]}, "extra": 1}]}, "unknown keys extra"),
    ],
)
def test_contract_that_cannot_run_as_written_is_refused(raw: dict, problem: str) -> None:
    with pytest.raises(knowledge_contract.ContractError) as exc:
        knowledge_contract.parse(raw)
    assert any(problem in p for p in exc.value.problems), exc.value.problems


def test_basic_card_has_the_card_shape_without_content() -> None:
    card = compiler.basic_card(version_id="v", skill_name="s", version="1", package_hash=None)
    assert set(card) == set(compile_files(pkg.files()).card)
    assert card["compiled"] is False
    assert "content" not in json.dumps(card)
