"""Generates a synthetic repository for the benchmarks: a git repository with N invariants over F
oracle files, blobs totalling B bytes, H harness files, a current manifest, and a change commit
of a chosen shape. Deterministic from the seed (same arguments, same bytes, same object ids).

    python3 bench/make_repo.py OUT --invariants 1000 --files 100 --blob-bytes 16MiB \\
        [--blobs K] [--harness 100] [--change production|blob|drop] [--seed 1] [--bazel]

Layout of OUT: `oracles/policy.toml`, `oracles/bench_NNN.toml` (rows `exact_table` on
`prod.calc:add`), K blobs (default one per invariant, each a JSON array of
`{"args": [a, b], "expected": a + b}` samples padded to B/K bytes): a blob only one file uses is
`oracles/blobs/bench_NNN/bKKKKK.json`, a shared one `oracles/blobs/bKKKKK.json`; `prod/calc.py`,
`harness/test_hNNNN.py`, `oracles/MANIFEST.sha256` (written by the gate's own `manifest --write`),
and the baselines a team would run instead of the gate: `adapter/test_oracle_rows.py`, a pytest
adapter that runs every row as a test in one process, and `adapter/check_pins.py`, a checker that
hashes and parses every pinned blob whole.
`main` is the base commit; the branch `change` holds the change and is checked out.

With `--bazel`, OUT is also a Bazel workspace that runs the gate's rules: the gate's own workspace
files and `tools/` are copied from this checkout, `oracles/BUILD.bazel` declares one suite and one
oracle test per oracle file (`oracle_suites`), `prod/` is a `py_library`, and every harness file
is a `py_test` of its own.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

GATE = Path(__file__).resolve().parents[1]
# A file in .git that marks a repository this script made (and may replace).
MARK = "bench-make-repo"
UNITS = {"": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}


def size(text: str) -> int:
    """Parses a byte count such as `1GiB`, `512MiB`, `64KiB` or `1000`.

    Raises:
        argparse.ArgumentTypeError: for anything else.
    """
    match = re.fullmatch(r"(\d+)(KiB|MiB|GiB)?", text)
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a byte count (e.g. 64KiB, 16MiB, 1GiB)")
    return int(match.group(1)) * UNITS[match.group(2) or ""]


def git(repo: Path, *args: str) -> str:
    """Runs git in `repo` with a fixed author and date; returns stdout.

    Raises:
        subprocess.CalledProcessError: when git fails.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ENV
    env |= {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}  # no user settings: same ids anywhere
    return subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True, text=True).stdout


def blob(index: int, nbytes: int, rng: random.Random) -> bytes:
    """One blob of about `nbytes` bytes (at least one sample): unique first samples, then a block of
    samples repeated to the size (generating 1 GiB sample by sample would dominate the run)."""
    second = rng.randrange(1000)
    head = [{"args": [index, second], "expected": index + second}]
    block = [
        {"args": [a, b], "expected": a + b}
        for a, b in ((rng.randrange(10**6), rng.randrange(10**6)) for _ in range(64))
    ]
    first = json.dumps(head)[1:-1]
    body = ", " + json.dumps(block)[1:-1]
    repeat = max(0, (nbytes - len(first) - 3) // len(body))
    return ("[" + first + body * repeat + "]\n").encode()


# The pytest adapter: each row a parametrized test, the entry called in the test process itself.
ADAPTER = '''"""Every oracle row as a pytest test: the blob's pin checked, each sample's args passed to the entry."""

import hashlib
import importlib
import json
import pathlib
import sys
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the production packages, whatever pytest's import mode


def rows():
    for path in sorted((ROOT / "oracles").glob("*.toml")):
        if path.name != "policy.toml":
            for row in tomllib.loads(path.read_text())["invariant"]:
                yield pytest.param(row, id=row["id"])


@pytest.mark.parametrize("row", list(rows()))
def test_invariant(row):
    data = (ROOT / row["blob"]).read_bytes()
    assert hashlib.sha256(data).hexdigest() == row["blob_sha256"]
    module, _, name = row["entry"].partition(":")
    entry = getattr(importlib.import_module(module), name)
    for sample in json.loads(data):
        assert entry(*sample["args"]) == sample["expected"]
'''

# The checker: every pinned blob read whole, hashed and parsed as JSON; exit 1 on a mismatch.
PIN_CHECKER = '''"""Checks every oracle row's blob against its pin and parses it as JSON."""

import hashlib
import json
import pathlib
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
seen = {}
for path in sorted((ROOT / "oracles").glob("*.toml")):
    if path.name != "policy.toml":
        for row in tomllib.loads(path.read_text())["invariant"]:
            if row["blob"] not in seen:
                data = (ROOT / row["blob"]).read_bytes()
                seen[row["blob"]] = hashlib.sha256(data).hexdigest()
                json.loads(data)
                del data
            if seen[row["blob"]] != row["blob_sha256"]:
                sys.exit(f"{row['id']}: {row['blob']} does not match its pin")
'''


def write(path: Path, data: bytes | str) -> None:
    """Writes a file, creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)


def oracle_file(rows: list[tuple[str, str, str]]) -> str:
    """An oracle file of `exact_table` rows (id, blob path, pin)."""
    out = ["schema = 1\n"]
    for ident, path, pin in rows:
        out.append(
            f'\n[[invariant]]\nid = "{ident}"\nentry = "prod.calc:add"\nkind = "exact_table"\n'
            f'blob = "{path}"\nblob_sha256 = "{pin}"\n'
        )
    return "".join(out)


# What a generated workspace copies from this checkout to run the gate's rules with Bazel 4.2.
WORKSPACE_FILES = (
    "WORKSPACE",
    ".bazelrc",
    "BUILD.bazel",
    "requirements.in",
    "requirements_lock.txt",
    "third_party/rules_cc",
    "third_party/coverage_tools",
    "tools/__init__.py",
    "tools/BUILD.bazel",
    "tools/bazel",
    "tools/oracle_gate",
    "tools/lock",
    "tools/engine",
)

ORACLES_BUILD = """load("//tools/bazel:oracle.bzl", "oracle_suites")

oracle_suites(
    name = "oracle_tests",
    srcs = glob(["*.toml"], exclude = ["policy.toml"]),
    blobs = glob(["blobs/**"]),
    policy = "policy.toml",
    deps = ["//prod"],
)

exports_files(["policy.toml", "MANIFEST.sha256"])

filegroup(
    name = "all_files",
    srcs = glob(["**"]),
    visibility = ["//tools/oracle_gate:__pkg__"],
)
"""

PROD_BUILD = """load("//tools/bazel:python.bzl", "py_library")

py_library(
    name = "prod",
    srcs = glob(["*.py"]),
    imports = [".."],
    visibility = ["//visibility:public"],
)
"""


def copy_workspace(out: Path) -> None:
    """Copies `WORKSPACE_FILES` from this checkout into `out`, without bytecode."""
    for rel in WORKSPACE_FILES:
        source = GATE / rel
        if source.is_dir():
            shutil.copytree(source, out / rel, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            write(out / rel, source.read_bytes())


def harness_build(count: int) -> str:
    """harness/BUILD.bazel: one py_test per harness file."""
    rules = ['load("//tools/bazel:python.bzl", "py_test")\n']
    for h in range(count):
        rules.append(
            f'\npy_test(\n    name = "test_h{h:04d}",\n    size = "small",\n    srcs = ["test_h{h:04d}.py"],\n)\n'
        )
    return "".join(rules)


def manifest(repo: Path) -> None:
    """Writes the manifest with the gate's own `manifest --write`.

    Raises:
        SystemExit: when the gate refuses.
    """
    proc = subprocess.run(
        [sys.executable, "-B", "-m", "tools.oracle_gate", "--repo", str(repo), "manifest", "--write"],
        cwd=GATE,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"make_repo: manifest --write failed: {proc.stderr.strip()}")


def generate(
    out: Path,
    invariants: int,
    files: int,
    blob_bytes: int,
    blobs: int,
    harness: int,
    change: str,
    seed: int,
    bazel: bool = False,
) -> None:
    """Writes and commits the repository at `out` (removed first if it exists); see the module doc."""
    if invariants < 1 or files < 1 or blobs < 1 or files > invariants:
        raise SystemExit("make_repo: need 1 <= files <= invariants and at least one blob")
    if out.exists() and any(out.iterdir()) and not (out / ".git" / MARK).is_file():
        raise SystemExit(f"make_repo: {out} exists and was not made by make_repo.py; choose another folder")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    git(out, "-c", "init.defaultBranch=main", "init", "-q")
    (out / ".git" / MARK).write_text("made by bench/make_repo.py\n")
    rng = random.Random(seed)
    write(
        out / "oracles/policy.toml",
        'schema = 1\nlabel = "oracle-change"\nprotected = ["oracles/**"]\nproduction_packages = ["prod"]\n',
    )
    write(out / "prod/__init__.py", "")
    write(out / "prod/calc.py", "def add(a, b):\n    return a + b\n")
    write(out / "adapter/test_oracle_rows.py", ADAPTER)
    write(out / "adapter/check_pins.py", PIN_CHECKER)
    users: list[set[int]] = [set() for _ in range(blobs)]
    for i in range(invariants):
        users[i % blobs].add(i % files)
    pins = []
    for k in range(blobs):
        data = blob(k, blob_bytes // blobs, rng)
        owner = f"bench_{min(users[k]):03d}/" if len(users[k]) == 1 else ""
        path = f"oracles/blobs/{owner}b{k:05d}.json"
        write(out / path, data)
        pins.append((path, hashlib.sha256(data).hexdigest()))
    per_file: list[list[tuple[str, str, str]]] = [[] for _ in range(files)]
    for i in range(invariants):
        path, pin = pins[i % blobs]
        per_file[i % files].append((f"add_{i:06d}", path, pin))
    for f, rows in enumerate(per_file):
        write(out / f"oracles/bench_{f:03d}.toml", oracle_file(rows))
    for h in range(harness):
        main = f'\n\nif __name__ == "__main__":\n    test_{h}()\n' if bazel else ""
        write(out / f"harness/test_h{h:04d}.py", f"def test_{h}():\n    assert {h} == {h}\n{main}")
    if bazel:
        copy_workspace(out)
        write(out / "oracles/BUILD.bazel", ORACLES_BUILD)
        write(out / "prod/BUILD.bazel", PROD_BUILD)
        write(out / "harness/BUILD.bazel", harness_build(harness))
    manifest(out)
    git(out, "add", "-A")
    git(out, "commit", "-q", "-m", "base")
    git(out, "checkout", "-q", "-b", "change")
    if change == "production":
        write(out / "prod/calc.py", 'def add(a, b):\n    """Returns a + b."""\n    return a + b\n')
    elif change == "blob":
        path, old_pin = pins[0]
        data = blob(10**6, blob_bytes // blobs, random.Random(seed + 1))
        write(out / path, data)
        # The new bytes hold other samples: a weakening the label's changelog must name, row by row.
        renamed = []
        for f in range(files):
            toml = out / f"oracles/bench_{f:03d}.toml"
            text = toml.read_text()
            renamed += [
                re.search(r'id = "([a-z0-9_]+)"', block).group(1)  # type: ignore[union-attr]
                for block in text.split("[[invariant]]")[1:]
                if old_pin in block
            ]
            toml.write_text(text.replace(old_pin, hashlib.sha256(data).hexdigest()))
        write(out / "oracles/CHANGELOG.md", "".join(f"- {i}: samples replaced by the benchmark\n" for i in renamed))
        manifest(out)
    elif change == "drop":
        toml = out / "oracles/bench_000.toml"
        blocks = toml.read_text().split("\n[[invariant]]")
        toml.write_text("\n[[invariant]]".join(blocks[:1] + blocks[2:]))  # the file's first row is gone
        manifest(out)
    git(out, "add", "-A")
    git(out, "commit", "-q", "-m", f"change: {change}")


def main(argv: list[str]) -> int:
    """Parses the command line and generates the repository; returns 0."""
    parser = argparse.ArgumentParser(prog="make_repo.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="where to create the repository (replaced)")
    parser.add_argument("--invariants", type=int, default=1000, help="N rows (default 1000)")
    parser.add_argument("--files", type=int, default=100, help="F oracle files (default 100)")
    parser.add_argument(
        "--blob-bytes", type=size, default=size("16MiB"), help="B bytes of blobs in all (default 16MiB)"
    )
    parser.add_argument("--blobs", type=int, help="K distinct blobs (default: one per invariant)")
    parser.add_argument("--harness", type=int, default=100, help="H harness files (default 100)")
    parser.add_argument(
        "--change",
        choices=("production", "blob", "drop"),
        default="production",
        help="the change commit: production code only, one blob re-pinned, one id dropped",
    )
    parser.add_argument("--seed", type=int, default=1, help="the seed (default 1)")
    parser.add_argument(
        "--bazel",
        action="store_true",
        help="also make it a Bazel workspace running the gate's rules (one suite and test per oracle file)",
    )
    args = parser.parse_args(argv)
    generate(
        args.out,
        args.invariants,
        args.files,
        args.blob_bytes,
        args.blobs or args.invariants,
        args.harness,
        args.change,
        args.seed,
        args.bazel,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
