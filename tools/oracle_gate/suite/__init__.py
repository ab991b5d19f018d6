"""The oracles of one tree: loading and validating `oracles/` (policy, oracle files, blobs),
the manifest of its file digests, and the spec-change report between two trees (docs/design.md
sections 1 and 4).

- `loader.py`: loads and validates everything under `oracles/` from a tree.
- `manifest.py`: `oracles/MANIFEST.sha256`, generated from `oracles/` only.
- `hidden_store.py`: the hidden store: blobs whose bytes are in no commit.
- `spec_changes.py`: the spec-change report, row by row and field by field, and the changelog rule.
- `sample_changes.py`: its per-sample part: what a changed blob does to a row's samples.
- `probe_files.py`: the probe's `oracles/`: rows the gate wrote, each with a blob of its samples.
"""
