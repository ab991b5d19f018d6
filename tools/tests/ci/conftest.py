"""The CI recipes' lint tests need no fixtures beyond pytest's own."""
