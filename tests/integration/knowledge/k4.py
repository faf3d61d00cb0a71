"""Data for the K4 tests: skill versions whose SKILL.md declares a knowledge contract, and knowledge packages whose
KNOWLEDGE.yaml declares what discovery matches against."""

from __future__ import annotations

import json
import uuid
from typing import Any


def skill_version(
    client: Any, account: Any, knowledge: dict[str, Any] | None, *, name: str | None = None
) -> str:
    """Publish a SKILL.md whose frontmatter carries ``knowledge`` (JSON is YAML); returns the version id."""
    name = name or f"skill-{uuid.uuid4().hex[:8]}"
    front = f"name: {name}\ndescription: Answers billing questions\n"
    if knowledge is not None:
        front += f"knowledge: {json.dumps(knowledge)}\n"
    body = f"---\n{front}---\n\n# Instructions\n\nAnswer from the knowledge base.\n"
    r = client.post(
        "/api/skills/versions",
        json={"skill_name": name, "version": "1", "content": body, "activate": True},
        headers=account.headers("skills:rw"),
    )
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def requirement(rid: str = "billing-docs", **kw: Any) -> dict[str, Any]:
    return {"id": rid, "purpose": "Billing reference", **kw}


def knowledge_base(
    account: Any, path: str, manifest: str, docs: dict[str, str] | None = None
) -> dict[str, Any]:
    """Register a local source at ``path`` and push a package over REST; returns ids and the package hash."""
    h = account.headers("knowledge:rw")
    r = account.client.post(
        "/api/knowledge/sources",
        json={"type": "local", "repository_url": "file:///kb", "package_path": path},
        headers=h,
    )
    assert r.status_code in (200, 201), r.text
    source = r.json()
    files = {"KNOWLEDGE.yaml": manifest, **(docs or {"docs/a.md": f"# {path}\n\nText.\n"})}
    r = account.client.post(
        f"/api/knowledge/sources/{source['id']}/snapshots",
        json={"files": [{"path": p, "content": c} for p, c in files.items()]},
        headers=h,
    )
    assert r.status_code in (200, 201), r.text
    revision = r.json()["revision"]
    return {
        "source_id": source["id"],
        "name": source["name"],
        "revision_id": revision["id"],
        "package_hash": revision["package_hash"],
    }


def record_run_selecting(client: Any, account: Any, source_id: str) -> dict[str, Any]:
    """A resolution run (of a fresh skill version) whose selected set holds ``source_id``."""
    vid = skill_version(client, account, {"requirements": [requirement(match={"capabilities": ["billing"]})]})
    found = client.post(
        "/api/knowledge/discover",
        json={"skill_version_id": vid},
        headers=account.headers("knowledge:r", "skills:r"),
    )
    assert found.status_code == 200, found.text
    r = client.post(
        "/api/knowledge/resolutions",
        json={
            "skill_version_id": vid,
            "requirement_id": "billing-docs",
            "discovery_status": "matched",
            "discovery_fingerprint": found.json()["discovery_fingerprint"],
            "selected": [{"source_id": source_id}],
        },
        headers=account.headers("knowledge:rw", "skills:r"),
    )
    assert r.status_code == 201, r.text
    return dict(r.json())
