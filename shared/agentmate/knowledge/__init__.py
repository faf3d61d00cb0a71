"""Knowledge (issue 12 onwards), on the shared package ingest (agentmate.packages): one sub-package per sub-domain,
each shaped like the reference domain (router, schemas, service or use-case modules, repository, and ``jobs.py``
where it declares job kinds); the MCP face is ``agentmate.mcp.tools.knowledge.<same name>``.

- ``sources``: register git/local sources, sync and snapshot ingest, revisions and documents (K1).
- ``catalog``: the K0 card per source with an active revision.
- ``search``: the chunk index of documents (``index``) and hybrid search over it (``service``) (K2).
- ``discovery``: a skill's knowledge contract against the catalog, and recorded resolution runs (K4).
- ``wiki``: the wiki compiler, its builds and wiki search (K3); ``quality``: lint, review, validation signals.
- ``readmodels``: the only modules that read another domain (skills, the wiki's builds).

Shared at this level: ``manifest`` (KNOWLEDGE.yaml: sources parse it, search and wiki read it), ``chunking``
(Markdown chunks for the document index and the wiki index) and ``jobs_router`` (job reads for every knowledge
kind; its service is ``agentmate.jobs``).
"""
