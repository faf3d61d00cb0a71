"""Skill search: indexing active versions' cards and hybrid search over them (no repository of its own: cards are
read through ``catalog.repository``, documents through ``agentmate.retrieval``)."""
