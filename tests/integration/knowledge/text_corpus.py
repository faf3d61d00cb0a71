"""Load the hand-written retrieval corpus (tests/fixtures/knowledge_corpus) as package files."""

from __future__ import annotations

from pathlib import Path

from agentmate.packages.schemas import FileInput

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "knowledge_corpus"
BIG_PARAGRAPH = "Oversized section filler about quotas and limits. " * 19 + "end"  # 953 characters


def files(package: str, extra: dict[str, str] | None = None) -> list[FileInput]:
    root = CORPUS / package
    out = {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}
    out.update(extra or {})
    return [FileInput(path=path, content=text) for path, text in sorted(out.items())]


def big_document() -> str:
    """An oversized section: a heading and 12 paragraphs of 953 characters (11,469 characters in all)."""
    return "# Limits\n\n" + "\n\n".join([BIG_PARAGRAPH] * 12) + "\n"
