"""The tag roster across the record domains (``GET /api/tags``): which tags exist, with counts, before an agent
filters by one. It owns no table: each record domain counts its own tags (``<domain>.service.tags`` over its
repository's ``tag_counts``), read here through one declared read model, ``readmodels/rosters.py``."""
