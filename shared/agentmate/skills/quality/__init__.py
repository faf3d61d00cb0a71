"""Offline deterministic quality checks of a skill version and the stored quality runs."""
