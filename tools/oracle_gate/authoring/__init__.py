"""Tools for the people who own the oracles: `init`, `propose`, `vacuity` and `pin`
(docs/oracles.md). They write files for a human to review; `check` never runs them.

- `init.py`: `init`, adding the gate to a repository, idempotently.
- `init_text.py`: the texts of the files and blocks `init` writes.
- `dist_metadata.py`: the distribution metadata `init` gives a production package's `py_library`.
- `lock.py`: `lock`, the hash-pinned lock of a repository's third-party distributions.
- `pin.py`: `pin`, each row's `blob_sha256` against its blob, and their rewrite in place.
- `promote.py`: `promote`, failing generated samples of one run made stored samples of the row's blob.
- `record.py`: `record`, a row's samples observed on approved code (the probe), planned and read.
- `record_files.py`: what `record` gives the probe besides its rows: the owners' `oracles/`, missing build files.
- `boundary.py`: a row's boundary samples: the edges of its generators, one field at a time.
- `propose.py`: `propose`, candidate rows for the public production functions a change added or changed.
- `propose_rows.py`: whole rows a reviewer can take as they are: `propose --all`, behaviour-kept rows.
- `pairs.py`: the name and signature rules of `propose --all` (round trips, canonical forms, binary operations).
- `propose_write.py`: `propose --write`, whole rows appended to their oracle files with their blobs.
- `vacuity.py`: `vacuity`, rows that check nothing: rows that pass on every mutant of their entry.
- `killing.py`: `vacuity --suggest`, a sample that kills each mutant a row survived.
- `bazel_rows.py`: the tools' row runner: a row's observations from the oracle test's own caller action.
- `reference_local.py`: the reference implementations run outside Bazel, for `vacuity` and tests.
"""
