"""The one ToolSet of ``/mcp/knowledge``; each knowledge tool file (sources, catalog, search, discovery, wiki, quality, jobs)
decorates its functions with ``tools.tool(...)`` and is imported by the package's ``__init__``."""

from __future__ import annotations

from agentmate.mcp.registry import ToolSet

tools = ToolSet(
    "knowledge",
    instructions=(
        "Knowledge collections of the account that owns the API key: Markdown packages with a root "
        "KNOWLEDGE.yaml, registered as sources (git, synced from a ref; or local, pushed as snapshots) whose "
        "immutable revisions hold the documents. Find a collection with knowledge_catalog_list (name/description "
        "filter, exact domain), list sources with knowledge_sources_list, read documents with "
        "knowledge_documents_list → knowledge_document_get. Reading needs knowledge:r, registering and syncing "
        "knowledge:rw. For a skill whose SKILL.md declares a knowledge: contract: knowledge_discover (its "
        "skill_version_id; needs knowledge:r and skills:r) gives each requirement a status, ranked candidates and "
        "a discovery_fingerprint; after the execution, knowledge_resolution_record (knowledge:rw and skills:r) "
        "freezes what was selected, retrieved and cited — references only, selected may be empty."
    ),
)
