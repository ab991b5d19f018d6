"""Path globs for protected paths: `**` spans directories, `*` and `?` stay within one segment.

The `protected` globs of `oracles/policy.toml` (docs/design.md section 3).
"""

from __future__ import annotations

import re
from functools import lru_cache


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """Compiles a repository-relative glob to a regular expression matching whole paths.

    `**/` matches zero or more directories, a trailing `**` matches everything below, `*` matches
    within one path segment, `?` one character other than `/`. Everything else is literal.
    """
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def matches(path: str, patterns: tuple[str, ...] | list[str]) -> str | None:
    """Returns the first pattern that matches `path` as a whole, or None."""
    for pattern in patterns:
        if compile_glob(pattern).fullmatch(path):
            return pattern
    return None
