"""A small knowledge corpus for wiki tests: a local source with N linked Markdown documents, and a compile
helper that runs the pipeline against the fake chat provider."""

from __future__ import annotations

from uuid import UUID

from agentmate.core.db import get_database
from agentmate.knowledge.sources import service as knowledge
from agentmate.knowledge.sources.schemas import KnowledgeSnapshotPush
from agentmate.knowledge.wiki import service as wiki
from agentmate.knowledge.wiki.compiler import CompileContext, compile_build
from agentmate.knowledge.wiki.schemas import CompileRequest
from agentmate.llm import ChatClient, ChatConfig
from agentmate.llm.settings import ModelSettings as Settings
from agentmate.packages.schemas import FileInput, SourceInput
from agentmate.packages.service import Actor

MANIFEST = "name: Product FAQ\ndescription: Billing and accounts\ninclude: ['docs/**']\n"


def documents(n: int, *, changed: dict[str, str] | None = None, drop: tuple[str, ...] = ()) -> dict[str, str]:
    """``docs/topic-XX.md``: each links to the next one, so the wiki has a chain of references."""
    docs = {}
    for i in range(n):
        nxt = f"topic-{(i + 1) % n:02d}.md"
        docs[f"docs/topic-{i:02d}.md"] = (
            f"# Topic {i:02d}\n\nTopic {i:02d} explains billing rule {i} in detail. "
            f"See [the next topic]({nxt}).\n"
        )
    docs.update(changed or {})
    for path in drop:
        docs.pop(path, None)
    return docs


def make_source(actor: Actor, name: str, docs: dict[str, str]) -> UUID:
    data = SourceInput(type="local", repository_url="file:///kb", package_path=f"kb/{name}")
    src = knowledge.register_source(get_database(), actor, data).source
    push(actor, src.id, docs)
    return src.id


def push(actor: Actor, source_id: UUID, docs: dict[str, str]) -> UUID:
    files = [FileInput(path="KNOWLEDGE.yaml", content=MANIFEST)] + [
        FileInput(path=p, content=c) for p, c in docs.items()
    ]
    return knowledge.push_snapshot(
        get_database(), actor, source_id, KnowledgeSnapshotPush(files=files)
    ).revision.id


def settings(fake, model: str = "fake-compiler", **kw) -> Settings:
    return Settings(
        jwt_secret="x" * 40,
        compiler_base_url=fake.base_url,
        compiler_model=model,
        reviewer_base_url="https://reviewer.example/v1",
        reviewer_model="other-reviewer",
        **kw,
    )


def client(fake, model: str = "fake-compiler") -> ChatClient:
    return ChatClient(ChatConfig(base_url=fake.base_url, api_key="k", model=model, timeout_s=10))


def enqueue(actor: Actor, fake, source_id: UUID, **req):
    model = req.pop("model", "fake-compiler")
    return wiki.compile_source(
        get_database(), actor, CompileRequest(source_id=source_id, **req), settings=settings(fake, model)
    )


def run(actor: Actor, fake, build_id: UUID, *, model: str = "fake-compiler", **ctx):
    c = client(fake, model)
    try:
        return compile_build(
            get_database(), build_id, CompileContext(account_id=actor.account_id, **ctx), client=c
        )
    finally:
        c.close()


def compile_now(actor: Actor, fake, source_id: UUID, **req):
    """Enqueue and run one build to its end (retries included); returns the final build."""
    queued = enqueue(actor, fake, source_id, **req)
    build_id = queued.result.build.id
    while run(actor, fake, build_id).status == "retry":
        pass
    return wiki.get_build(get_database(), actor, build_id)
