"""The oracles of one tree: loading and validating `oracles/` (policy, oracle files, blobs),
the manifest of its file digests, and the spec-change report between two trees (docs/design.md
sections 1 and 4)."""
