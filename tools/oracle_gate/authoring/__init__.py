"""Tools for the people who own the oracles: `init`, `propose`, `vacuity` and `pin`
(docs/oracles.md). They write files for a human to review; `check` never runs them."""
