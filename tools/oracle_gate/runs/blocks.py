"""What each run hides from the change's sandboxed actions (docs/design.md section 10): the
repository's oracles and git directories and the copies git names, this output base's judge's views,
test logs and server folder and every other output base, other runs' folders, the gate's own
cache entries that hold copies of the oracles, and the gate's own code where an action could
rewrite it; and the run folder itself, which must lie where sandboxed actions cannot write.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import subprocess
from collections.abc import Mapping, Sequence

from tools.oracle_gate.errors import GateError

# Folders Bazel 4.2's linux-sandbox leaves writable to every action, whatever the flags.
SANDBOX_WRITABLE = ("/tmp", "/dev/shm")


def runs_dir(environ: Mapping[str, str]) -> str:
    """Where the gate keeps a run's files (event files, execution logs, the clean run's tree):
    `$XDG_CACHE_HOME/oracle-gate/runs`, else `$HOME/.cache/oracle-gate/runs`.

    Raises:
        GateError: (exit 1) when that folder is relative, or lies under `/tmp` or `/dev/shm`, which
            Bazel 4.2's sandbox leaves writable to every action, so the change's code could rewrite
            what the gate reads.
    """
    cache = environ.get("XDG_CACHE_HOME") or os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".cache")
    if not os.path.isabs(cache):
        raise GateError(
            f"the gate's cache folder {cache!r} is not an absolute path; set XDG_CACHE_HOME (or HOME) "
            "to an absolute path"
        )
    path = os.path.join(cache, "oracle-gate", "runs")
    real = os.path.realpath(path)
    for top in SANDBOX_WRITABLE:
        if real == top or real.startswith(top + os.sep):
            raise GateError(
                f"the gate's run folder {path} is under {top}, which every sandboxed action can write; "
                "set XDG_CACHE_HOME (or HOME) to a folder elsewhere"
            )
    os.makedirs(path, exist_ok=True)
    return path


def path_folder(prefix: str, path: str, environ: Mapping[str, str]) -> str:
    """The gate's persistent folder of one path (a repository or a tree): `RUNS/<prefix><16 hex
    digits of the sha256 of the path's real path>` (`runs_dir`), so each checkout keeps its own.

    Raises:
        GateError: (exit 1) when the run folder is unusable (`runs_dir`).
    """
    key = hashlib.sha256(os.fsencode(os.path.realpath(path))).hexdigest()[:16]
    return os.path.join(runs_dir(environ), prefix + key)


def repository_blocks(repo: str) -> list[str]:
    """The paths of a repository that hold expected values and that no sandboxed action needs: its
    `oracles/` folder and its git directories (real paths, so a symlink cannot route around them).

    Raises:
        GateError: (exit 1) when git cannot name the git directory.
    """
    paths = [os.path.realpath(os.path.join(repo, "oracles"))]
    for flag in ("--absolute-git-dir", "--git-common-dir"):
        proc = subprocess.run(
            ["git", "-C", repo, "rev-parse", flag],
            capture_output=True,
            text=True,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        if proc.returncode != 0 or not proc.stdout.strip():
            raise GateError(f"`git rev-parse {flag}` failed in {repo}: {proc.stderr.strip()}")
        paths.append(os.path.realpath(os.path.join(repo, proc.stdout.strip())))
    for other in local_copies(repo, paths[-1]):
        paths += [os.path.join(other, "oracles"), os.path.join(other, ".git"), other if _is_bare(other) else ""]
    return [p for p in dict.fromkeys(os.path.realpath(p) for p in paths if p) if os.path.isdir(p)]


def _is_bare(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "HEAD")) and os.path.isdir(os.path.join(path, "objects"))


def local_copies(repo: str, common_dir: str) -> list[str]:
    """Other copies of the repository on this host that git itself names: remotes whose URL is a
    local path (`/path`, `./path`, `file://`), and the repositories of `objects/info/alternates`.
    Each holds the oracles too, so the gate blocks their `oracles/` and git directory as well.
    Copies git does not name (an unrelated second clone) stay out of reach (docs/threat-model.md).

    Args:
        repo: the work tree.
        common_dir: its git common directory (`git rev-parse --git-common-dir`, real path).

    Returns:
        Real paths of the copies' top folders (work tree or bare repository), ones that exist.
    """
    proc = subprocess.run(
        ["git", "-C", repo, "config", "--get-regexp", r"^remote\..*\.url$"],
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    found: list[str] = []
    for line in proc.stdout.splitlines():
        url = line.split(" ", 1)[1].strip() if " " in line else ""
        if url.startswith("file://"):
            url = url[len("file://") :]
        elif ":" in url.split("/", 1)[0]:  # scp-like `host:path` or a `scheme://` URL: not on this host
            continue
        if url:
            found.append(os.path.realpath(os.path.join(repo, url)))
    try:
        with open(os.path.join(common_dir, "objects", "info", "alternates"), encoding="utf-8") as f:
            for line in f:
                objects = line.strip()
                if objects and not objects.startswith("#"):
                    git_dir = os.path.dirname(os.path.realpath(os.path.join(common_dir, "objects", objects)))
                    found.append(os.path.dirname(git_dir) if os.path.basename(git_dir) == ".git" else git_dir)
    except OSError:
        pass
    return [p for p in dict.fromkeys(found) if os.path.isdir(p)]


_OUTPUT_BASE_NAME = re.compile(r"[0-9a-f]{32}")


def output_base_blocks(bazel_bin: str, testlogs: str, output_base: str) -> list[str]:
    """The paths of output bases that hold expected values: this one's judge's folder, the judge's
    views of the oracles package (`bazel-bin/oracles/_sealed`, see oracle_suite.bzl, in every
    configuration's `bin`, `judge_folders`) and
    its oracle test logs, whose failure messages name expected values; every other output base
    under the same output user root (other workspaces and copies of this one, with their own views
    and pristine trees); this output base's `server` folder, whose request cookie lets a client
    command the server; and its `bazel-workers` folder, where the gate's persistent workers stage
    each request's inputs (oracle files, blobs, judge's views) and write its outputs
    (flags.worker_flags)."""
    paths = [
        os.path.join(bazel_bin, "oracles", "_sealed"),
        os.path.join(testlogs, "oracles"),
        # The Bazel server's request cookie: with it, an action could drive the server.
        os.path.join(output_base, "server"),
        os.path.join(output_base, "bazel-workers"),
    ]
    paths += judge_folders(bazel_bin)
    root = os.path.dirname(os.path.realpath(output_base))
    try:
        siblings = sorted(os.listdir(root))
    except OSError:
        siblings = []
    own = os.path.basename(os.path.realpath(output_base))
    paths += [
        os.path.join(root, name)
        for name in siblings
        if name != own and _OUTPUT_BASE_NAME.fullmatch(name) and os.path.isdir(os.path.join(root, name))
    ]
    return paths


def judge_folders(bazel_bin: str) -> list[str]:
    """The judge's folder, `bin/oracles/_sealed`, of every configuration of this output base that has one
    (the exec configuration builds the reference action's binary, whose runfiles hold
    oracles/reference/): a name Bazel picks, so listed after the views are built (bazel_run.py)."""
    bazel_out = os.path.dirname(os.path.dirname(bazel_bin))
    return sorted(glob.glob(os.path.join(glob.escape(bazel_out), "*", "bin", "oracles", "_sealed")))


def block_flags(paths: Sequence[str]) -> list[str]:
    """`--sandbox_block_path` flags for those of `paths` that exist (Bazel 4.2 refuses to block a
    path that does not), leaving out each path inside another one of them: the sandbox hides a
    blocked folder behind an empty one, so a path below it no longer exists there and Bazel's
    linux-sandbox fails the action when it tries to block it too (`mount(...): No such file or
    directory`). The folder's block covers it."""
    present = [path for path in dict.fromkeys(paths) if os.path.lexists(path)]
    folders = {p.rstrip("/") + "/" for p in present}
    return [
        f"--sandbox_block_path={path}"
        for path in present
        if not any(path.startswith(folder) and path != folder.rstrip("/") for folder in folders)
    ]


def gate_code_root() -> str:
    """The real path of the folder that holds this gate's `tools/` package (this file is
    `tools/oracle_gate/runs/blocks.py` under it)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))))


def gate_code_blocks(root: str, repo: str) -> list[str]:
    """The gate's own code folder (`root`, `gate_code_root`) when it must be blocked from the
    change's sandboxed actions: it lies under `/tmp` or `/dev/shm`, which Bazel 4.2's sandbox
    lets every action write, so a change could rewrite the gate for its next run. Blocked, it
    is neither readable nor writable there. A gate inside the checked repository `repo` needs
    no block: the sandbox mounts the workspace read-only, also under `/tmp`.

    Returns:
        `[real path of root]`, or `[]`.

    Raises:
        GateError: (exit 1) when `root` is `/tmp` or `/dev/shm` itself, which cannot be blocked.
    """
    real = os.path.realpath(root)
    workspace = os.path.realpath(repo)
    if real == workspace or real.startswith(workspace + os.sep):
        return []
    for top in SANDBOX_WRITABLE:
        if real == top:
            raise GateError(
                f"the gate's own code lies directly in {top} ({os.path.join(real, 'tools', 'oracle_gate')}), "
                f"which every sandboxed action can write and the gate cannot block; keep the gate's "
                f"checkout in a folder of its own, outside {top} (docs/ci.md)"
            )
        if real.startswith(top + os.sep):
            return [real]
    return []


def sibling_runs(folder: str, own: str) -> list[str]:
    """The other runs' folders in `folder` (another run's pristine tree holds its oracles)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    own_real = os.path.realpath(own)
    return [
        os.path.join(folder, n)
        for n in names
        if os.path.isdir(os.path.join(folder, n)) and not own_real.startswith(os.path.realpath(os.path.join(folder, n)))
    ]


# Where the loopback engine, the Bazel 7 root and BuildGrid live when not in the default cache folder.
GATE_CACHE_ENV = "ORACLE_GATE_CACHE"

# Where tools/bazel7/bazel7.sh keeps its Debian sid root when not in that cache folder.
SID_ROOT_ENV = "ORACLE_GATE_SID_ROOT"

# Folders the gate's own tools keep in its cache folder that can hold copies of the oracles: the
# Bazel 7 root of tools/bazel7/bazel7.sh (with its own output bases), and the loopback engine's
# storage (`oracle_gate engine`, tools/bazel7/remote_check.py), whose CAS holds the uploaded views.
GATE_CACHE_COPIES = ("sid-root", "sid-root.partial", "engine", "remote7-")


def gate_cache_entries(runs_folder: str, environ: Mapping[str, str], keep: Sequence[str]) -> list[str]:
    """The folders the gate's own tools keep beside its run folder that can hold copies of the
    oracles (GATE_CACHE_COPIES: a name, or a prefix ending in `-`), in the run folder's parent and
    in `$ORACLE_GATE_CACHE`, and the sid root `$ORACLE_GATE_SID_ROOT` names (with its `.partial`
    build folder); none that holds a path of `keep` (the work tree, the output base), which the
    run needs. Other folders there (a checkout a generated repository depends on, say) are left
    readable.

    Args:
        runs_folder: `runs_dir(environ)`.
        environ: the environment; only GATE_CACHE_ENV and SID_ROOT_ENV are read.
        keep: real paths that must stay readable.
    """
    parents = [os.path.dirname(runs_folder)] + ([environ[GATE_CACHE_ENV]] if environ.get(GATE_CACHE_ENV) else [])
    candidates: list[str] = []
    for parent in dict.fromkeys(os.path.realpath(p) for p in parents):
        try:
            names = sorted(os.listdir(parent))
        except OSError:
            continue
        candidates += [
            os.path.join(parent, name)
            for name in names
            if any(name == c or (c.endswith("-") and name.startswith(c)) for c in GATE_CACHE_COPIES)
        ]
    sid_root = environ.get(SID_ROOT_ENV, "")
    if os.path.isabs(sid_root):
        sid_root = os.path.realpath(sid_root)
        candidates += [sid_root, sid_root + ".partial"]
    found: list[str] = []
    for path in dict.fromkeys(candidates):
        if not os.path.isdir(path) or os.path.islink(path):
            continue
        if any(k == path or k.startswith(path + os.sep) for k in keep):
            continue
        found.append(path)
    return found
