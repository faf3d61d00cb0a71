"""The K0 catalog: one card per knowledge source with an active revision."""
