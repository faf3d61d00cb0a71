"""Operator use cases (admin only): the lexical rebuild and account suspension.

No repository: admin owns no table and runs no SQL of its own; each use case checks the admin and calls the
owning domain's service (``retrieval.service.rebuild_lexical``, ``auth.service.set_account_suspended``), whose
SECURITY DEFINER functions check the admin role again in the database.
"""
