"""Per-account limits (issue 25 §1): one tenant cannot starve the others.

``settings`` (the ``LIMIT_*`` group), ``repository`` (the SQL), ``service`` (admission of a request, the release
of an expensive request's lease, the usage report). The transports call ``service.admit`` right after
authentication (``api/deps.py``, ``mcp/server.py``); the state lives in Postgres so it holds across processes.
"""
