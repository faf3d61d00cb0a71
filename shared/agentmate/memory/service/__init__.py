"""Memory use cases, one module each, callable without HTTP (MCP tools use the same functions): each takes the
database, the caller and typed values. Postgres is the source of truth.

events (journal), entries (durable memories), projection (their retrieval documents), ranking (hybrid search),
curation (supersede + feedback), checkpoints (save/resume), provenance (timeline + attribution). Reading another
domain goes through ``memory.readmodels`` only.
"""
