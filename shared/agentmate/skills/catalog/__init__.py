"""The skills catalog: L0 cards of active skills, a version's instructions (L1) and its resources (L2)."""
