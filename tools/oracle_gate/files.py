"""Replacing a file of the work tree in place, as `pin --write`, `manifest --write`, `promote
--write` and `record --write` do, without following any link the change may have planted."""

from __future__ import annotations

import os
import stat
import tempfile

# The mode of a file `replace_file` creates: what a checkout gives a file that is not executable.
NEW_FILE_MODE = 0o644


def replace_file(target: str, data: bytes) -> None:
    """Writes `data` (bytes) to `target` through a new temporary file in the same folder, created
    exclusively under a random name (`tempfile.mkstemp`), then renamed over `target`. A symlink
    or file the change left at a predictable name (`target.tmp`) is neither followed nor
    clobbered; a symlink at `target` itself is replaced, not written through. The file keeps the
    mode of the regular file it replaces, or gets NEW_FILE_MODE.

    Raises:
        OSError: when the folder cannot be written; the temporary file is removed.
    """
    folder, name = os.path.split(target)
    try:
        info = os.lstat(target)
        mode = stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else NEW_FILE_MODE
    except FileNotFoundError:
        mode = NEW_FILE_MODE
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder or ".")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def linked_folder(root: str, path: str) -> str | None:
    """The first folder on the way from `root` to the repository-relative `path` (`/`-separated)
    that is a symlink, or None: a file written there would land wherever the link points. Raises
    nothing."""
    parts = path.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        if os.path.islink(os.path.join(root, *parts[:depth])):
            return "/".join(parts[:depth])
    return None
