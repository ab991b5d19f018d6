"""Reading commits: git invocations, blob objects and the digests known for them (a run's `Trust`
in `objects.py`), trees of a commit or a work tree, the pristine tree of the clean run and the
checkout transformations git can apply, the conversions `.gitattributes` asks for, and the
functions of a Python file a change added, changed or removed (`functions.py`) (docs/design.md
sections 1, 3 and 4). Imports nothing of the gate but `git/` and `errors`."""
