"""Compiling a version's package into its artifact: SKILL.md frontmatter, the knowledge contract, the L0 card."""
