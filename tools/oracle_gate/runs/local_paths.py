"""The host paths a workspace's Bazel reads outside its own tree (docs/design.md section 10, "The
sealed root of the clean run"): the `path` of `local_repository` and `new_local_repository` in
`WORKSPACE` or `WORKSPACE.bazel`, of `local_path_override` in `MODULE.bazel`, and the paths of
`--override_repository=NAME=PATH` and `--override_module=NAME=PATH` lines in `.bazelrc`
(`%workspace%` is the tree's root).

A relative path is relative to the repository's root (Bazel's rule for all four). A run in a tree
other than the user's checkout (the clean run's pristine tree, the merge result's checkout) must
show the same host folder where the relative path points from that tree; `LocalPath.host` is what
the path names from the user's checkout, `LocalPath.seen_at` where the run's tree looks for it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from tools.oracle_gate.errors import GateError

# The files Bazel reads that can name a local path, and the rules or flags that do.
_RULE_FILES = ("WORKSPACE", "WORKSPACE.bazel", "MODULE.bazel")
_RULE = re.compile(r"\b(local_repository|new_local_repository|local_path_override)\s*\(([^()]*)\)", re.S)
_PATH_ATTRIBUTE = re.compile(r"\bpath\s*=\s*(?:\"([^\"\n]*)\"|'([^'\n]*)')")
_OVERRIDE_FLAG = re.compile(r"--(override_repository|override_module)=([^=\s]+)=(\S+)")
# An rc line's command and config: `common:bazel7-bzlmod --flag` -> "bazel7-bzlmod".
_RC_CONFIG = re.compile(r"^\s*\w+(?::([\w.-]+))?\s")


@dataclass(frozen=True)
class LocalPath:
    """One local path the workspace's Bazel reads.

    Attributes:
        source: `FILE:LINE` where it is written (repository-relative file).
        rule: the rule or flag that names it (`local_repository`, `--override_module`, ...).
        written: the path as written.
        host: the real host path it names from the user's checkout (`repo`); it may not exist.
        seen_at: where a run of the tree `tree` looks for it (absolute, normalised; equal to the
            written path when that is absolute).
        config: the `.bazelrc` config whose lines name it (`common:NAME`), "" when it always applies.
    """

    source: str
    rule: str
    written: str
    host: str
    seen_at: str
    config: str = ""

    def describe(self) -> str:
        """`SOURCE RULE PATH` for a report line."""
        return f"{self.source} {self.rule} {self.written}"


def _strip_comments(text: str) -> str:
    """`text` with `#` comments blanked out, line numbers kept (a `#` inside a string is rare in
    these files and at worst hides a path the build then fails to find: exit 1, not a pass)."""
    return "\n".join(line.split("#", 1)[0] for line in text.split("\n"))


def _read(tree: str, rel: str) -> str:
    try:
        with open(os.path.join(tree, rel), encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise GateError(f"cannot read {rel} to find its local paths: {exc}") from None


def local_paths(tree: str, repo: str) -> list[LocalPath]:
    """Every local path of `tree`'s WORKSPACE, WORKSPACE.bazel, MODULE.bazel and .bazelrc, in
    file order.

    Args:
        tree: the root of the tree Bazel runs in (absolute).
        repo: the user's checkout whose committed content `tree` holds (absolute): relative paths
            name host folders from there.

    Raises:
        GateError: (exit 1) when one of those files exists but cannot be read as UTF-8.
    """
    found: list[LocalPath] = []
    for rel in _RULE_FILES:
        text = _strip_comments(_read(tree, rel))
        for match in _RULE.finditer(text):
            attribute = _PATH_ATTRIBUTE.search(match.group(2))
            if attribute is not None:
                line = text.count("\n", 0, match.start(2) + attribute.start()) + 1
                found.append(
                    _resolve(
                        f"{rel}:{line}", match.group(1), attribute.group(1) or attribute.group(2) or "", tree, repo
                    )
                )
    text = _strip_comments(_read(tree, ".bazelrc"))
    for number, line_text in enumerate(text.split("\n"), start=1):
        config = _RC_CONFIG.match(line_text)
        for match in _OVERRIDE_FLAG.finditer(line_text):
            written = match.group(3).strip("\"'")
            path = _resolve(f".bazelrc:{number}", f"--{match.group(1)}", written, tree, repo)
            found.append(replace(path, config=(config.group(1) or "") if config else ""))
    return found


def _resolve(source: str, rule: str, written: str, tree: str, repo: str) -> LocalPath:
    """The LocalPath of `written`: `%workspace%` and a relative path resolved against `repo` (the
    host folder) and against `tree` (where the run looks)."""
    if written.startswith("%workspace%"):
        written_rel = written[len("%workspace%") :].lstrip("/") or "."
        return LocalPath(
            source,
            rule,
            written,
            os.path.realpath(os.path.join(repo, written_rel)),
            os.path.normpath(os.path.join(tree, written_rel)),
        )
    if os.path.isabs(written):
        return LocalPath(source, rule, written, os.path.realpath(written), os.path.normpath(written))
    return LocalPath(
        source,
        rule,
        written,
        os.path.realpath(os.path.join(repo, written)),
        os.path.normpath(os.path.join(tree, written)),
    )


def outside(paths: list[LocalPath], tree: str, configs: Sequence[str] | None = ()) -> list[LocalPath]:
    """The paths of `paths` that a run of `tree` does not find in the tree itself, once each; of
    the `.bazelrc` lines of a config, only those of `configs` (the run's `--config` names; None for
    every config)."""
    root = os.path.normpath(tree)
    seen: dict[str, LocalPath] = {}
    for path in paths:
        if path.seen_at == root or path.seen_at.startswith(root + os.sep):
            continue
        if path.config and configs is not None and path.config not in configs:
            continue
        seen.setdefault(path.seen_at, path)
    return list(seen.values())
