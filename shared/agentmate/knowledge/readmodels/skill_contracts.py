"""Read model over the skills domain, for discovery and resolution runs: a skill version's compiled ``knowledge:``
contract (``skills/compile/knowledge_contract.py``) and its identity string.

Only a *current* artifact counts (this compiler version, the version's own package identity), the rule the skills
registry serves instructions by: a stale contract would be discovered against and then recorded as something the
skill no longer declares. This is the only knowledge module that reads the skills domain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from agentmate.core.db import Conn
from agentmate.core.errors import Conflict, invalid
from agentmate.skills.compile import compiler
from agentmate.skills.compile.repository import CURRENT


@dataclass(frozen=True, slots=True)
class SkillContract:
    skill_version_id: UUID
    skill_name: str
    version: str
    contract: dict[str, Any]
    """The normalised contract: mode, purpose, scope, requirements (sorted by id)."""
    identity: str

    def requirement(self, requirement_id: str) -> dict[str, Any] | None:
        """The requirement with this id (ids are unique case-insensitively)."""
        wanted = requirement_id.strip().lower()
        return next((r for r in self.contract["requirements"] if r["id"].lower() == wanted), None)

    @property
    def requirement_ids(self) -> list[str]:
        return [r["id"] for r in self.contract["requirements"]]


def compiled_contract(
    conn: Conn, *, account_id: UUID, version_id: UUID, field: str = "skill_version_id"
) -> SkillContract:
    """The version's current compiled contract. A version that is not in this account is a 400 naming ``field``;
    one without a current artifact is a 409 (compile it); one whose SKILL.md declares no contract is a 400."""
    row = conn.execute(
        f"""SELECT v.id, v.skill_name, v.version, a.skill_version_id IS NOT NULL AS compiled,
                   a.knowledge_contract, a.knowledge_contract_identity
            FROM skill_versions v LEFT JOIN skill_compiled_artifacts a ON a.account_id = v.account_id
                 AND a.skill_version_id = v.id AND {CURRENT}
            WHERE v.account_id = %(a)s AND v.id = %(v)s""",
        {"a": account_id, "v": version_id, "cv": compiler.COMPILER_VERSION},
    ).fetchone()
    if row is None:
        raise invalid(field, "unknown skill version in this account")
    if not row["compiled"]:
        raise Conflict(
            "this skill version has no current compiled artifact (not compiled yet, or its SKILL.md "
            "frontmatter does not compile): POST /api/skills/compile with its skill_version_id "
            "(skills:rw), then discover again"
        )
    if row["knowledge_contract"] is None:
        raise invalid(
            field,
            "this skill version declares no knowledge: contract in its SKILL.md frontmatter, so "
            "there is nothing to discover",
        )
    return SkillContract(
        skill_version_id=row["id"],
        skill_name=row["skill_name"],
        version=row["version"],
        contract=row["knowledge_contract"],
        identity=row["knowledge_contract_identity"],
    )
