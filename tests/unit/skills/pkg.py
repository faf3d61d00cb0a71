"""Purpose-built skill packages for the compiler and quality tests (hashes computed here, independently)."""

from __future__ import annotations

import hashlib
from dataclasses import replace

from agentmate.skills.compile import compiler
from agentmate.skills.quality import checks as quality

ACCOUNT = "acct-1"
REVISION = "rev-1"

SKILL = """---
name: domain-web
description: Build and review small web services
license: MIT
compatibility: Needs Python 3.11
metadata:
  author: tests
allowed-tools: Read Bash(git:*)
triggers: [build a web service, add an http route]
capabilities: [fastapi, http-api]
constraints: [no network in tests]
dependencies: [python-basics]
knowledge:
  requirements:
    - id: api-docs
      purpose: Reference for the framework's routing API
      required: true
      match: {capabilities: [api-reference], languages: [en]}
---

# Instructions

Write each route handler thin, keep the logic in a service, and test every route against a real database.
"""


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def text_file(fid: str, path: str, text: str, mime: str = "text/markdown") -> quality.QFile:
    data = text.encode("utf-8")
    return quality.QFile(
        id=fid,
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
        mime_type=mime,
        indexable=True,
        content=text,
        account_id=ACCOUNT,
        revision_id=REVISION,
    )


def binary_file(fid: str, path: str, data: bytes) -> quality.QFile:
    return quality.QFile(
        id=fid,
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
        mime_type="image/png",
        indexable=False,
        content=None,
        account_id=ACCOUNT,
        revision_id=REVISION,
    )


def identity_hash(files: list[quality.QFile]) -> str:
    # Written out again here (not quality.package_hash) so the test checks the rule, not the code.
    lines = sorted(f"{f.path}\0{f.sha256}\0{f.size_bytes}" for f in files)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def files(skill: str = SKILL) -> list[quality.QFile]:
    return [
        text_file("f-skill", "SKILL.md", skill),
        text_file("f-ref", "references/routing.md", "# Routing\n\nRoutes are declared on a router object.\n"),
        text_file("f-script", "scripts/check.py", "print('ok')\n", mime="text/x-python"),
        binary_file("f-logo", "assets/logo.png", b"\x89PNG\r\n\x1a\nfake"),
    ]


def version(fs: list[quality.QFile], skill: str = SKILL, **over: object) -> quality.QVersion:
    v = quality.QVersion(
        id="ver-1",
        account_id=ACCOUNT,
        skill_name="domain-web",
        version="1.0.0",
        content=skill,
        content_hash=sha(skill),
        package_hash=identity_hash(fs),
        source_revision_id=REVISION,
        expected_name="domain-web",
    )
    return replace(v, **over)  # type: ignore[arg-type]


def compiled(v: quality.QVersion, fs: list[quality.QFile]) -> quality.QArtifact | None:
    try:
        art = compiler.compile_version(
            compiler.VersionIn(v.id, v.skill_name, v.version, v.content, v.package_hash or v.content_hash),
            list(fs),
        )
    except compiler.CompileError:
        return None
    return quality.QArtifact(
        v.id,
        art.compiler_name,
        art.compiler_version,
        art.input_package_hash,
        art.artifact_hash,
        art.resource_manifest,
    )


def package(skill: str = SKILL) -> quality.QPackage:
    fs = files(skill)
    v = version(fs, skill)
    return quality.QPackage(v, fs, compiled(v, fs))
