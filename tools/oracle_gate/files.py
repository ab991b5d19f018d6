"""Replacing a file of the work tree in place, as `pin --write`, `manifest --write` and `promote
--write` do, without following any link the change may have planted."""

from __future__ import annotations

import os
import tempfile


def replace_file(target: str, data: bytes) -> None:
    """Writes `data` (bytes) to `target` through a new temporary file in the same folder, created
    exclusively under a random name (`tempfile.mkstemp`), then renamed over `target`. A symlink
    or file the change left at a predictable name (`target.tmp`) is neither followed nor
    clobbered; a symlink at `target` itself is replaced, not written through.

    Raises:
        OSError: when the folder cannot be written; the temporary file is removed.
    """
    folder, name = os.path.split(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
