"""KNOWLEDGE.yaml: the manifest every knowledge package carries at its root (spec/001 "Knowledge").

Parsed with PyYAML's safe loader (no Python objects can be constructed), refused when it uses anchors/aliases
(an alias bomb expands exponentially) or exceeds 64 KiB, and validated field by field: a missing or invalid
manifest is a 400 naming ``KNOWLEDGE.yaml.<field>``. include/exclude globs select the documents; the manifest
itself always participates in the package hash and is never a document.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, ClassVar, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentmate.core.errors import FieldError, ValidationFailed

MANIFEST_PATH = "KNOWLEDGE.yaml"
MAX_MANIFEST_BYTES = 64 * 1024
_Term = Field(min_length=1, max_length=64)


class KnowledgeManifest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    field_hints: ClassVar[dict[str, str]] = {
        "title": "the collection's name is name",
        "tags": "declare match terms in capabilities (and languages)",
        "domain": "the domain comes from the source's package_path, not the manifest",
    }

    name: str = Field(min_length=1, max_length=128)
    description: str | None = Field(default=None, max_length=2000)
    profile: str | None = Field(default=None, min_length=1, max_length=64)
    language: str | None = Field(default=None, min_length=1, max_length=32)
    capabilities: list[str] = Field(default_factory=list, max_length=16)
    languages: list[str] = Field(default_factory=list, max_length=16)
    include: list[str] = Field(default_factory=list, max_length=64)
    exclude: list[str] = Field(default_factory=list, max_length=64)
    citation_policy: Literal["required", "optional"] | None = None

    def selects(self, path: str) -> bool:
        """Whether a package file becomes a document (the manifest never does)."""
        if path == MANIFEST_PATH:
            return False
        included = not self.include or any(_glob(g).match(path) for g in self.include)
        return included and not any(_glob(g).match(path) for g in self.exclude)


def _invalid(field: str, message: str) -> ValidationFailed:
    return ValidationFailed([FieldError(f"{MANIFEST_PATH}.{field}" if field else MANIFEST_PATH, message)],
                            f"{MANIFEST_PATH}{'.' + field if field else ''}: {message}")


def parse_manifest(text: str | None) -> KnowledgeManifest:
    if text is None:
        raise _invalid("", "every knowledge package needs a root KNOWLEDGE.yaml (text)")
    if len(text.encode()) > MAX_MANIFEST_BYTES:
        raise _invalid("", f"larger than {MAX_MANIFEST_BYTES} bytes")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text, Loader=loader)):
            raise _invalid("", "YAML anchors and aliases are not allowed")
        data: Any = yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise _invalid("", f"is not valid YAML{where}") from exc
    if not isinstance(data, dict):
        raise _invalid("", "must be a YAML mapping with at least name")
    try:
        manifest = KnowledgeManifest.model_validate(data)
    except ValidationError as exc:
        errors = []
        for e in exc.errors():
            field = ".".join(str(p) for p in e["loc"])
            errors.append(FieldError(f"{MANIFEST_PATH}.{field}", e["msg"],
                                     ["required", "optional"] if field == "citation_policy" else None))
        raise ValidationFailed(errors, f"{MANIFEST_PATH}: invalid fields: " + ", ".join(e.field for e in errors)) \
            from exc
    for field in ("include", "exclude"):
        for i, pattern in enumerate(getattr(manifest, field)):
            if not pattern or pattern.startswith("/") or len(pattern) > 256:
                raise _invalid(f"{field}.{i}", "a glob relative to the package root, at most 256 characters")
    return manifest


@lru_cache(maxsize=512)
def _glob(pattern: str) -> re.Pattern[str]:
    """``**`` any folders, ``*`` within one segment, ``?`` one character; a folder name alone matches its contents
    (``docs`` ≡ ``docs/**``)."""
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
