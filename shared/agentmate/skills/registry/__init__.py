"""Skill package sources and their ingest (push a snapshot, sync a git ref) into published versions."""
