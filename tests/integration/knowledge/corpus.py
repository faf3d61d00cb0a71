"""The registry test corpus (tests/fixtures/knowledge_registry): packages as snapshot file lists or git trees."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "knowledge_registry"


def package(path: str) -> dict[str, bytes]:
    """The files of one package folder (``product/faq``), relative to it."""
    base = ROOT / path
    return {p.relative_to(base).as_posix(): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def snapshot(path: str, **changes: str) -> list[dict[str, Any]]:
    """A snapshot push body's files: text as ``content``, anything else as ``content_base64``."""
    files = {**package(path), **{k: v.encode() for k, v in changes.items()}}
    out: list[dict[str, Any]] = []
    for name, data in files.items():
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is None or "\0" in text:
            out.append({"path": name, "content_base64": base64.b64encode(data).decode()})
        else:
            out.append({"path": name, "content": text})
    return out


def repository() -> dict[str, bytes]:
    """The whole corpus as one repository tree (package_path = the package folder)."""
    return {
        p.relative_to(ROOT).as_posix(): p.read_bytes()
        for p in sorted(ROOT.rglob("*"))
        if p.is_file() and p.name != "README.md"
    }


@contextmanager
def loopback_git(monkeypatch: Any) -> Iterator[Any]:
    """The packages tests' loopback git server holding the corpus as ``acme/kb`` (``main_sha``; ``commit(files)``
    commits a new tree), with the knowledge registry's policy and fetcher pointed at it."""
    from agentmate.knowledge.sources import service
    from agentmate.packages.git import GitFetcher
    from tests.integration.packages.gitserver import GitServer, commit_tree
    from tests.integration.packages.test_packages_git import SETTINGS, make_policy

    server = GitServer().start()
    policy = make_policy()
    monkeypatch.setattr(service, "net_policy", lambda: policy)
    monkeypatch.setattr(service, "fetcher", lambda: GitFetcher(policy, SETTINGS))
    server.main_sha = commit_tree(server.repo("acme/kb"), repository())  # type: ignore[attr-defined]
    server.commit = lambda files: commit_tree(server.repo("acme/kb"), files)  # type: ignore[attr-defined]
    try:
        yield server
    finally:
        server.stop()
