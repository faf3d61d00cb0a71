"""Knowledge registry (issue 12), on the shared package ingest (agentmate.packages).

K1: the registry's tables (migrations/0055, from the packages template, plus the revision manifest),
KNOWLEDGE.yaml parsing with a safe YAML loader and its validation, include/exclude document selection, and the
use cases register / push snapshot / sync / list sources, revisions and documents / get one document; REST in
``router`` (served by functions/knowledge), MCP in ``agentmate.mcp.tools.knowledge``.
"""
