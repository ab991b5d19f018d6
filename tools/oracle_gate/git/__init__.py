"""Reading commits: git invocations, blob objects and the digests known for them (a run's `Trust`
in `objects.py`), trees of a commit or a work tree, the pristine tree of the clean run and the
checkout transformations git can apply, the conversions `.gitattributes` asks for, and the
functions of a Python file a change added, changed or removed (`functions.py`) (docs/design.md
sections 1, 3 and 4). Imports nothing of the gate but `git/` and `errors`.

- `gitio.py`: the git plumbing the gate relies on, every output read NUL-separated.
- `objects.py`: blob objects through one `git cat-file --batch` process, and their sha256 (`Trust`).
- `tree.py`: read-only views of a tree of files: a git commit or a work-tree directory.
- `worktree.py`: whether the work tree holds exactly HEAD.
- `pristine.py`: a pristine tree: committed content only, written from git objects.
- `transform.py`: checkout-time byte transformations: pinned bytes git rewrote in the work tree.
- `attributes.py`: the checkout conversions a commit's `.gitattributes` files ask for.
- `functions.py`: which functions of a Python file a change added, changed or removed.
"""
