"""Data for the K4 tests: skill versions whose SKILL.md declares a knowledge contract, and knowledge packages whose
KNOWLEDGE.yaml declares what discovery matches against."""

from __future__ import annotations

import json
import uuid
from typing import Any
from uuid import UUID

from agentmate.core.db import get_database
from agentmate.knowledge import service
from agentmate.packages.models import FileInput, SourceInput
from agentmate.packages.service import Actor


def actor_of(account: Any) -> Actor:
    return Actor(UUID(account.account_id), UUID(account.user_id))


def skill_version(client: Any, account: Any, knowledge: dict[str, Any] | None, *, name: str | None = None) -> str:
    """Publish a SKILL.md whose frontmatter carries ``knowledge`` (JSON is YAML); returns the version id."""
    name = name or f"skill-{uuid.uuid4().hex[:8]}"
    front = f"name: {name}\ndescription: Answers billing questions\n"
    if knowledge is not None:
        front += f"knowledge: {json.dumps(knowledge)}\n"
    body = f"---\n{front}---\n\n# Instructions\n\nAnswer from the knowledge base.\n"
    r = client.post("/api/skills/versions", json={"skill_name": name, "version": "1", "content": body,
                                                  "activate": True}, headers=account.headers("skills:rw"))
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def requirement(rid: str = "billing-docs", **kw: Any) -> dict[str, Any]:
    return {"id": rid, "purpose": "Billing reference", **kw}


def knowledge_base(account: Any, path: str, manifest: str, docs: dict[str, str] | None = None) -> dict[str, Any]:
    """Register a local source at ``path`` and push a package; returns ids and the package hash."""
    actor = actor_of(account)
    db = get_database()
    source = service.register_source(db, actor, SourceInput(type="local", repository_url="file:///kb",
                                                            package_path=path)).source
    files = {"KNOWLEDGE.yaml": manifest, **(docs or {"docs/a.md": f"# {path}\n\nText.\n"})}
    out = service.push_snapshot(db, actor, source.id, [FileInput(path=p, content=c) for p, c in files.items()])
    return {"source_id": str(source.id), "name": source.name, "revision_id": str(out.ingested.revision.id),
            "package_hash": out.ingested.revision.package_hash}
