"""The style tests need no fixtures beyond pytest's own."""
