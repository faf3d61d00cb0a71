"""KNOWLEDGE.yaml: the manifest every knowledge package carries at its root (spec/001 "Knowledge").

Parsed with ``core.safe_yaml`` (a safe loader; anchors/aliases refused, an alias bomb expands exponentially;
a value its constructor refuses, such as ``2024-13-45``, names its field), at most 64 KiB, and validated field by
field: a missing or invalid manifest is a 400 naming ``KNOWLEDGE.yaml.<field>``. include/exclude globs select the
documents, matched by ``packages.globs`` in time linear in the path (a regex translation backtracked
exponentially on ``*a*a*a…b``); the manifest itself always participates in the package hash and is never a
document.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from agentmate.core import safe_yaml
from agentmate.core.errors import FieldError, ValidationFailed
from agentmate.core.validation import unknown_field
from agentmate.packages.globs import GlobSet

MANIFEST_PATH = "KNOWLEDGE.yaml"
MAX_MANIFEST_BYTES = 64 * 1024
# Glob limits: each pattern is one bit per character of the matcher's state, which every path character
# updates; with these a 2,000-file git sync matches in about a second at worst (docs/benchmarks.md).
MAX_GLOBS = 64  # each of include and exclude
MAX_GLOB_CHARS = 256  # one pattern
MAX_GLOB_TOTAL = 4096  # include and exclude together
_Term = Annotated[str, Field(min_length=1, max_length=64)]
_GLOBS = (
    f"at most {MAX_GLOBS} globs of at most {MAX_GLOB_CHARS} characters, {MAX_GLOB_TOTAL} characters in "
    "include and exclude together: ** any folders, * within one segment, ? one character; a folder name "
    "alone matches its contents"
)


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
    capabilities: list[_Term] = Field(
        default_factory=list, max_length=16, description="Match terms, at most 16 of 1..64 characters"
    )
    languages: list[_Term] = Field(
        default_factory=list, max_length=16, description="Languages, at most 16 of 1..64 characters"
    )
    include: list[str] = Field(
        default_factory=list,
        max_length=MAX_GLOBS,
        description=f"Globs selecting the documents (none: every file); {_GLOBS}",
    )
    exclude: list[str] = Field(
        default_factory=list, max_length=MAX_GLOBS, description=f"Globs leaving files out; {_GLOBS}"
    )
    citation_policy: Literal["required", "optional"] | None = None

    def selects(self, path: str) -> bool:
        """Whether a package file becomes a document (the manifest never does)."""
        if path == MANIFEST_PATH:
            return False
        included, excluded = _globs(tuple(self.include), tuple(self.exclude)).match(path)
        return (included or not self.include) and not excluded


def _invalid(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(
        [FieldError(f"{MANIFEST_PATH}.{field}" if field else MANIFEST_PATH, message)],
        f"{MANIFEST_PATH}{'.' + field if field else ''}: {message}",
    )


KEYS = list(KnowledgeManifest.model_fields)
"""The keys a KNOWLEDGE.yaml may have (an unknown key's error lists them)."""


def _field_error(e: ErrorDetails) -> FieldError:
    field = ".".join(str(p) for p in e["loc"])
    if e["type"] == "extra_forbidden":
        hint = KnowledgeManifest.field_hints.get(field)
        message = "unknown key" + (f" ({hint})" if hint else "") + "; allowed keys: " + ", ".join(KEYS)
        # likely_meant as for every unknown field of a write model: the key the hint names, else the closest
        meant = unknown_field(field, str(e["loc"][-1]), KEYS, KnowledgeManifest.field_hints).likely_meant
        return FieldError(f"{MANIFEST_PATH}.{field}", message, KEYS, meant)
    allowed: list[Any] | None = ["required", "optional"] if field == "citation_policy" else None
    return FieldError(f"{MANIFEST_PATH}.{field}", e["msg"], allowed)


def parse_manifest(text: str | None) -> KnowledgeManifest:
    if text is None:
        raise _invalid("", "every knowledge package needs a root KNOWLEDGE.yaml (text)")
    if len(text.encode()) > MAX_MANIFEST_BYTES:
        raise _invalid("", f"larger than {MAX_MANIFEST_BYTES} bytes")
    try:
        data: Any = safe_yaml.load(text)
    except safe_yaml.YamlProblem as exc:
        raise _invalid(exc.path, exc.message) from None
    if not isinstance(data, dict):
        raise _invalid("", "must be a YAML mapping with at least name")
    try:
        manifest = KnowledgeManifest.model_validate(data)
    except ValidationError as exc:
        errors = [_field_error(e) for e in exc.errors()]
        raise ValidationFailed(
            errors, f"{MANIFEST_PATH}: invalid fields: " + ", ".join(e.field for e in errors)
        ) from exc
    total = 0
    for field in ("include", "exclude"):
        for i, pattern in enumerate(getattr(manifest, field)):
            total += len(pattern)
            if (
                not pattern
                or pattern.startswith("/")
                or len(pattern) > MAX_GLOB_CHARS
                or total > MAX_GLOB_TOTAL
            ):
                raise _invalid(f"{field}.{i}", f"a glob relative to the package root; {_GLOBS}")
    return manifest


@lru_cache(maxsize=64)
def _globs(include: tuple[str, ...], exclude: tuple[str, ...]) -> GlobSet:
    """One matcher per manifest (an ingest calls ``selects`` once per file)."""
    return GlobSet(list(include), list(exclude))
