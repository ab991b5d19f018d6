"""Reference implementations: human-owned functions whose return values are the expected values of
rows that name them in `reference` (docs/oracles.md, "Reference rows"). They run in an action of
their own, never with the change's code; they import the standard library only."""
