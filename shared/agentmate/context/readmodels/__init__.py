"""Read models of the context pack: the only modules through which a layer reads another domain's service that is
not its own (each listed by name in pyproject's import contract)."""
