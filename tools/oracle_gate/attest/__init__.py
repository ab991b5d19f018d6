"""The verdict as a signed-ready statement (docs/design.md section 14): what `check --attest` writes
and what `verify` checks. The signature is the CI platform's (docs/ci.md); nothing here signs.

- `statement.py`: the two in-toto Statements of one check, a SLSA Verification Summary
  Attestation and the per-id results it names by digest, in canonical JSON.
- `schema.py`: the shape of the two lines, as JSON Schema, and the validator `verify` uses.
- `sources.py`: the digest of the gate's own sources and the repository's URI, as a statement names them.
- `verify.py`: a statement file checked against a commit and the claims of a revision, with what
  it recomputes from git.
"""
