"""Profile versions: the rules a build's check applies (allowed page kinds and link types, citation policy, max
pages, max page chars, max build tokens, max page-count drift). A version is immutable and identified by its
settings: the first build of an account under a profile name records the platform's settings as version 1, and
a change of settings makes the next version, so every build's provenance names exactly the rules it passed."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any
from uuid import UUID

DEFAULT_PROFILE = "default"


@dataclass(frozen=True, slots=True)
class ProfileSettings:
    allowed_page_kinds: tuple[str, ...] = (
        "summary",
        "entity",
        "concept",
        "overview",
        "synthesis",
        "index",
        "log",
    )
    allowed_link_types: tuple[str, ...] = (
        "references",
        "contradicts",
        "supersedes",
        "elaborates",
        "mentions_entity",
    )
    citation_policy: str = "required"
    max_pages: int = 200
    max_page_chars: int = 20_000
    max_build_tokens: int = 400_000
    max_page_count_drift: float = 0.5

    def settings_hash(self) -> str:
        data = {**asdict(self), "max_page_count_drift": f"{self.max_page_count_drift:.3f}"}
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Profile:
    id: UUID
    name: str
    version: int
    settings: ProfileSettings

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Profile:
        drift = row["max_page_count_drift"]
        return cls(
            id=row["id"],
            name=row["name"],
            version=row["version"],
            settings=ProfileSettings(
                allowed_page_kinds=tuple(row["allowed_page_kinds"]),
                allowed_link_types=tuple(row["allowed_link_types"]),
                citation_policy=row["citation_policy"],
                max_pages=row["max_pages"],
                max_page_chars=row["max_page_chars"],
                max_build_tokens=row["max_build_tokens"],
                max_page_count_drift=float(drift),
            ),
        )


# The platform's settings per profile name a manifest may declare; unknown names use the default rules.
PLATFORM_PROFILES: dict[str, ProfileSettings] = {DEFAULT_PROFILE: ProfileSettings()}


def settings_for(name: str) -> ProfileSettings:
    return PLATFORM_PROFILES.get(name, PLATFORM_PROFILES[DEFAULT_PROFILE])
