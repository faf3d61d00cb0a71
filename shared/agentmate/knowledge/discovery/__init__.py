"""K4 discovery (a skill's knowledge contract against the catalog) and recorded resolution runs."""
