"""The context pack: one budgeted, cited execution context assembled from six layers.

No repository: context owns no table and runs no SQL of its own. Each layer reads its domain only through that
domain's service (``layers/``, ``readmodels/``), so every read keeps the owning domain's rules (scopes, filters,
validity); the pack only passes those services its one tenant transaction (``transaction.py``).
"""
