"""The skill compiler: one version's SKILL.md + package file records → the L0 card, L1 instructions, L2 manifest.

- **L0 card**: what a catalog or a search hit shows so an agent can choose a skill: names, description,
  routing metadata (triggers, capabilities, constraints, dependencies), the knowledge contract's mode and
  requirement ids, resource counts. Bounded (``MAX_CARD_BYTES``) and never carrying the instructions or a resource
  body: only cards enter the retrieval index.
- **L1 instructions**: the SKILL.md body after the frontmatter, loaded on demand from Postgres.
- **L2 manifest**: one entry per package file other than SKILL.md (path, kind, MIME type, size, sha256,
  indexability, text availability), without content; one text resource is loaded on demand by file id.

Pure and deterministic: the output depends on the version and the set of files, never on their order (files are
sorted by path) or on the clock, and it is encoded as canonical JSON (sorted keys) so equal inputs give equal bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentmate.skills.compile import frontmatter as fm
from agentmate.skills.compile import knowledge_contract as kc

COMPILER_NAME = "agentmate-skill-compiler"
COMPILER_VERSION = "1.1.0"
ROOT_FILE = "SKILL.md"
MAX_CARD_BYTES = 48 * 1024
MAX_RESOURCE_PATH = 1024
MAX_MANIFEST_BYTES = 512 * 1024
# Top-level folders of the public Agent Skills layout → resource kind.
KINDS = {
    "references": "reference",
    "scripts": "script",
    "assets": "asset",
    "examples": "example",
    "templates": "template",
    "agents": "agent_config",
}
RESOURCE_KINDS = (*sorted(set(KINDS.values())), "file")


class CompileError(Exception):
    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class FileIn:
    """A package file record as the compiler sees it (``content`` is the text snapshot, None for binary)."""

    id: str
    path: str
    sha256: str
    size_bytes: int
    mime_type: str
    indexable: bool
    content: str | None


@dataclass(frozen=True)
class VersionIn:
    id: str
    skill_name: str
    version: str
    content: str
    package_hash: str


@dataclass(frozen=True)
class Artifact:
    card: dict[str, Any]
    instructions: str
    resource_manifest: list[dict[str, Any]]
    knowledge_contract: dict[str, Any] | None
    knowledge_contract_identity: str
    frontmatter: dict[str, Any]
    input_package_hash: str
    artifact_hash: str
    compiler_name: str = COMPILER_NAME
    compiler_version: str = COMPILER_VERSION

    def as_dict(self) -> dict[str, Any]:
        return {
            "compiler": {"name": self.compiler_name, "version": self.compiler_version},
            "input_package_hash": self.input_package_hash,
            "card": self.card,
            "instructions": self.instructions,
            "resource_manifest": self.resource_manifest,
            "knowledge_contract": self.knowledge_contract,
            "knowledge_contract_identity": self.knowledge_contract_identity,
            "frontmatter": self.frontmatter,
            "artifact_hash": self.artifact_hash,
        }


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def resource_kind(path: str) -> str:
    top = path.split("/", 1)[0] if "/" in path else ""
    return KINDS.get(top, "file")


def manifest_of(files: Sequence[FileIn]) -> list[dict[str, Any]]:
    """The L2 manifest: every file but SKILL.md, sorted by path, without content."""
    return [
        {
            "file_id": f.id,
            "path": f.path,
            "kind": resource_kind(f.path),
            "mime_type": f.mime_type,
            "size_bytes": f.size_bytes,
            "sha256": f.sha256,
            "indexable": f.indexable,
            "text_available": f.content is not None,
        }
        for f in sorted(files, key=lambda f: f.path)
        if f.path != ROOT_FILE
    ]


def basic_card(*, version_id: str, skill_name: str, version: str, package_hash: str | None) -> dict[str, Any]:
    """The card shown when no current artifact exists (never compiled, or compilation failed): names only."""
    return {
        "skill_version_id": version_id,
        "skill_name": skill_name,
        "version": version,
        "name": None,
        "description": "",
        "compatibility": None,
        "license": None,
        "allowed_tools": [],
        "triggers": [],
        "capabilities": [],
        "constraints": [],
        "dependencies": [],
        "resource_count": 0,
        "text_resource_count": 0,
        "knowledge": None,
        "package_hash": package_hash,
        "compiled": False,
    }


def compile_version(version: VersionIn, files: list[FileIn]) -> Artifact:
    """Compile one version; raises CompileError listing every problem (the package identity is unaffected).
    A SKILL.md without frontmatter, or without ``name`` and ``description``, does not compile: the Agent Skills
    format requires both, and a failed compile is what keeps ``activate: true`` from activating a version."""
    problems: list[str] = []
    try:
        front = fm.parse(version.content)
    except fm.FrontmatterError as exc:
        raise CompileError(exc.problems) from None
    if not front.present:
        raise CompileError([fm.MISSING_FRONTMATTER])
    ordered = sorted(files, key=lambda f: f.path)
    if len({f.path for f in ordered}) != len(ordered):
        problems.append("files: duplicate paths")
    manifest = manifest_of(ordered)
    if any(not m["path"] or len(m["path"]) > MAX_RESOURCE_PATH for m in manifest):
        problems.append(f"files: a resource path is empty or longer than {MAX_RESOURCE_PATH} characters")
    if len(canonical_json(manifest).encode()) > MAX_MANIFEST_BYTES:
        problems.append(f"files: the resource manifest is larger than {MAX_MANIFEST_BYTES} bytes")
    contract = front.knowledge
    card = {
        "skill_version_id": version.id,
        "skill_name": version.skill_name,
        "version": version.version,
        "name": front.name,
        "description": front.description,
        "compatibility": front.compatibility,
        "license": front.license,
        "allowed_tools": front.allowed_tools,
        **front.routing(),
        "resource_count": len(manifest),
        "text_resource_count": sum(1 for m in manifest if m["text_available"]),
        "knowledge": None
        if contract is None
        else {
            "mode": contract["mode"],
            "requirement_ids": [r["id"] for r in contract["requirements"]],
        },
        "package_hash": version.package_hash,
        "compiled": True,
    }
    if len(canonical_json(card).encode()) > MAX_CARD_BYTES:
        problems.append(f"card: larger than {MAX_CARD_BYTES} bytes")
    if problems:
        raise CompileError(problems)
    front_out = {
        "present": front.present,
        "name": front.name,
        "description": front.description,
        "compatibility": front.compatibility,
        "license": front.license,
        "metadata": front.metadata,
        "allowed_tools": front.allowed_tools,
        **front.routing(),
        "unknown_keys": front.unknown_keys,
    }
    instructions = fm.body_of(version.content)
    identity = kc.identity(contract)
    body = {
        "compiler": {"name": COMPILER_NAME, "version": COMPILER_VERSION},
        "input_package_hash": version.package_hash,
        "card": card,
        "instructions": instructions,
        "resource_manifest": manifest,
        "knowledge_contract": contract,
        "knowledge_contract_identity": identity,
        "frontmatter": front_out,
    }
    return Artifact(
        card=card,
        instructions=instructions,
        resource_manifest=manifest,
        knowledge_contract=contract,
        knowledge_contract_identity=identity,
        frontmatter=front_out,
        input_package_hash=version.package_hash,
        artifact_hash=hashlib.sha256(canonical_json(body).encode()).hexdigest(),
    )


def card_text(card: dict[str, Any]) -> tuple[str, str]:
    """(title, content) of the retrieval document for a card: routing text only, never instructions."""
    title = card.get("name") or card["skill_name"]
    lines = [card["skill_name"], card.get("description") or ""]
    for key in ("triggers", "capabilities", "constraints"):
        if card.get(key):
            lines.append(f"{key}: " + "; ".join(card[key]))
    return title, "\n".join(line for line in lines if line)
