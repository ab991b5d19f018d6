"""The owners' tools' row runner: a row's observations from the oracle test's own caller action
(`//oracles:<file>_test.observations`, tools/bazel/private/oracle_test.bzl), built by Bazel on a
copy of the work tree, so that `vacuity` and `promote` run a row as `check` does: its suite, the
production library's `deps` (third-party distributions, `py_dist_info`, a `src/` layout), the
caller and its limits. Never run by `check`.

The copy lies beside the repository (`<parent>/.<name>.oracle-gate-<random>`), so that every
relative path the repository's WORKSPACE, MODULE.bazel or .bazelrc names (`../oracle-gate`, the
dependency `init` writes) resolves as it does from the repository itself; a mutant is written into
the copy only, never into the work tree. Bazel runs unsealed, as the owner's own `bazel build`
does, with an output user root of its own under the gate's cache folder, shut down and removed at
the end (`close`).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Mapping
from typing import Any

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.runs.bazel_binary import resolve
from tools.oracle_gate.runs.blocks import runs_dir
from tools.oracle_gate.runs.flags import config_flags
from tools.oracle_gate.runs.launch import failure_cause

# The longest one build of a suite's observations may take, in seconds.
BUILD_TIMEOUT_S = 1800


def observations_target(source: str) -> str:
    """The caller action's target of the oracle file `source` (`oracles/shop.toml` ->
    `//oracles:shop_test.observations`), as `oracle_suites` names it."""
    stem = os.path.splitext(os.path.basename(source))[0]
    return f"//oracles:{stem}_test.observations"


def _tracked_and_new(repo: str) -> list[str]:
    try:
        out = subprocess.run(
            ["git", "-C", repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            check=True,
            stdin=subprocess.DEVNULL,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise GateError(f"cannot list the work tree's files with git: {exc}") from None
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def _writable(path: str) -> None:
    """Makes every folder under `path` writable by its owner (Bazel leaves its outputs read-only)."""
    for root, dirs, _ in os.walk(path):
        for name in dirs:
            full = os.path.join(root, name)
            if not os.path.islink(full):
                os.chmod(full, os.stat(full).st_mode | stat.S_IWUSR | stat.S_IXUSR)


class BazelRows:
    """A copy of the work tree with its Bazel, for running rows of it on changed sources.

    Raises (constructor):
        GateError: (exit 1) when the copy cannot be made beside the repository or the gate's cache
            folder cannot be used.
    """

    def __init__(self, repo: str, environ: Mapping[str, str]) -> None:
        self.repo, self.environ = os.path.realpath(repo), dict(environ)
        parent, name = os.path.split(self.repo)
        try:
            self.tree = tempfile.mkdtemp(prefix=f".{name}.oracle-gate-", dir=parent)
            cache = os.path.join(os.path.dirname(runs_dir(environ)), "authoring")
            os.makedirs(cache, exist_ok=True)
            self.out = tempfile.mkdtemp(prefix="bazel-", dir=cache)
            for rel in _tracked_and_new(self.repo):
                src, dst = os.path.join(self.repo, rel), os.path.join(self.tree, rel)
                if not os.path.lexists(src):
                    continue
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                if os.path.islink(src):
                    os.symlink(os.readlink(src), dst)
                else:
                    shutil.copy2(src, dst)
        except OSError as exc:
            raise GateError(f"cannot copy the work tree beside {self.repo} to run its rows with Bazel: {exc}") from None
        self.changed: dict[str, bytes] = {}
        self.bin = ""

    def _bazel(self, *args: str) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                [resolve(self.environ), f"--output_user_root={self.out}", *args],
                cwd=self.tree,
                env=self.environ,
                capture_output=True,
                text=True,
                check=False,
                stdin=subprocess.DEVNULL,
                timeout=BUILD_TIMEOUT_S,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise GateError(f"bazel {args[0]} on the copy of the work tree failed: {exc}") from None

    def _own_file(self, rel: str) -> str:
        """The copy's regular file `rel`, reached through no symbolic link.

        Raises:
            GateError: (exit 1) when `rel` or a folder on its way is a symbolic link: a write there
                could land outside the copy, in the owner's work tree.
        """
        path = os.path.join(self.tree, rel)
        if (
            os.path.realpath(os.path.dirname(path)) != os.path.join(os.path.realpath(self.tree), os.path.dirname(rel))
            or os.path.islink(path)
            or not os.path.isfile(path)
        ):
            raise GateError(
                f"{rel} is a symbolic link, lies under one, or is not a file: the owners' tools write "
                "changed sources only into regular files of the copy"
            )
        return path

    def _write(self, rel: str, data: bytes) -> None:
        path = self._own_file(rel)
        os.unlink(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)

    def set_sources(self, files: Mapping[str, str]) -> None:
        """Writes `files` (repository-relative path -> text) into the copy, and puts back every
        file an earlier call changed that `files` does not name.

        Raises:
            GateError: (exit 1) for a file that is a symbolic link or lies under one (`_own_file`).
        """
        for rel, original in list(self.changed.items()):
            if rel not in files:
                self._write(rel, original)
                del self.changed[rel]
        for rel, text in files.items():
            if rel not in self.changed:
                with open(self._own_file(rel), "rb") as f:
                    self.changed[rel] = f.read()
            self._write(rel, text.encode("utf-8"))

    def observations(self, source: str, salt: str) -> Any:
        """The observations document of the oracle file `source`'s caller action on the copy as it
        is now, its samples drawn with `salt` (`--define=oracle_salt`).

        Raises:
            GateError: (exit 1) when Bazel cannot build it, naming Bazel's first ERROR line.
        """
        flags = [*config_flags(self.environ), f"--define=oracle_salt={salt}", "--symlink_prefix=/"]
        proc = self._bazel("build", *flags, observations_target(source))
        if proc.returncode != 0:
            raise GateError(
                f"bazel build {observations_target(source)} failed on the copy of the work tree: "
                f"{failure_cause(proc.stderr)}"
            )
        if not self.bin:
            info = self._bazel("info", *flags, "bazel-bin")
            if info.returncode != 0:
                raise GateError(f"bazel info failed on the copy of the work tree: {failure_cause(info.stderr)}")
            self.bin = info.stdout.strip()
        stem = os.path.splitext(os.path.basename(source))[0]
        try:
            with open(os.path.join(self.bin, "oracles", f"{stem}_test.observations.json"), encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def close(self) -> None:
        """Shuts the copy's Bazel server down and removes the copy and its output user root. Raises nothing."""
        try:
            self._bazel("shutdown")
        except GateError:
            pass
        for path in (self.tree, self.out):
            try:
                _writable(path)
            except OSError:
                pass
            shutil.rmtree(path, ignore_errors=True)

    def __enter__(self) -> BazelRows:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
