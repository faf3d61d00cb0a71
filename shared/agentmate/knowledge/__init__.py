"""Knowledge registry K1 (issue 12 item 1), on the shared package ingest (agentmate.packages).

Done here: the registry's tables (migrations/0055, from the packages template, plus the revision's manifest),
KNOWLEDGE.yaml parsing with a safe YAML loader and its validation, include/exclude document selection, and the
use cases register / push snapshot / sync / list sources, revisions and documents / get one document.
Not done yet: the REST routes, the MCP tools, the Lambda function, and K2+ (catalog, chunking, search).
"""
