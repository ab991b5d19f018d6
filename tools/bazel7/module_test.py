"""oracle-gate used by another repository, end to end, on Bazel 7: as a module (bzlmod) or as a
WORKSPACE repository.

Generates a small repository (a `shop` production package, one oracle file, one blob, a harness
test) that uses this checkout's rules and gate: with `--mode bzlmod` (the default) its MODULE.bazel
has `bazel_dep(name = "oracle_gate")` with a `local_path_override`; with `--mode workspace` its
WORKSPACE has `local_repository(name = "oracle_gate")` and the Python rules setup of
`//tools/bazel:workspace.bzl`. Then, with the `bazel` on PATH:

1. `bazel test //...` passes, and the gate's `check` (run from this checkout with `--repo`) passes
   a production-only change, with `--clean` too;
2. a change that breaks the production function fails `bazel test` and `check` (exit 4);
3. a change that edits the oracle file without the label fails `check` (exit 2).

Run it where `bazel` is Bazel 7: `tools/bazel7/bazel7.sh --run python3 tools/bazel7/module_test.py [--mode M]`.
It prints one line per step and exits 0 when every step saw what it expects, 1 otherwise.
The repository is generated in `$XDG_CACHE_HOME/oracle-gate/module-test-<mode>` (default
`~/.cache`), beside a copy of this checkout that it uses (both removed at the end).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

GATE = Path(__file__).resolve().parents[2]

MODULE = """\
module(name = "shop")

bazel_dep(name = "rules_python", version = "0.22.1")
bazel_dep(name = "oracle_gate", version = "0.4.0")
local_path_override(
    module_name = "oracle_gate",
    path = "{gate}",
)
"""

WORKSPACE = """\
workspace(name = "shop")

local_repository(
    name = "oracle_gate",
    path = "{gate}",
)

load("@oracle_gate//tools/bazel:workspace.bzl", "python_rules")

python_rules()
"""

# Offline on Debian sid's Bazel 7.7.1 (as oracle-gate's own .bazelrc, configs bazel7-*): with
# bzlmod, the stand-ins for the modules @bazel_tools declares that Debian does not package; in
# WORKSPACE mode, Debian's packaged rule sets for the repositories Bazel's WORKSPACE suffix downloads.
BAZELRC = {
    "bzlmod": """\
common --enable_bzlmod
common --noenable_workspace
common --lockfile_mode=off
common --override_module=protobuf={gate}/third_party/bzlmod/protobuf
common --override_module=zlib={gate}/third_party/bzlmod/zlib
common --override_module=buildozer={gate}/third_party/bzlmod/buildozer
common --override_module=apple_support={gate}/third_party/bzlmod/apple_support
""",
    "workspace": """\
common --enable_bzlmod=false
common --enable_workspace
common --override_repository=bazel_skylib=/usr/share/bazel/tools/skylib
common --override_repository=platforms=/usr/share/bazel/tools/platforms
common --override_repository=rules_cc=/usr/share/bazel/rules/cc
common --override_repository=rules_python=/usr/share/bazel/rules/python
common --override_repository=rules_license=/usr/share/bazel/rules/license
""",
}

BAZELRC_COMMON = """\
build --nosandbox_debug
build --incompatible_strict_action_env
build --spawn_strategy=linux-sandbox
test --test_output=errors
"""

SHOP_BUILD = """\
load("@oracle_gate//tools/bazel:python.bzl", "py_library")

py_library(
    name = "shop",
    srcs = glob(["*.py"]),
    visibility = ["//visibility:public"],
)
"""

PRICES = '''\
"""Prices of the shop, in integer cents."""


def line_total_cents(quantity: int, unit_price_cents: int) -> int:
    """Returns quantity x unit price, in cents."""
    return quantity * unit_price_cents
'''

BROKEN_PRICES = PRICES.replace("return quantity * unit_price_cents", "return quantity * unit_price_cents - 1")

ORACLES_BUILD = """\
load("@oracle_gate//tools/bazel:oracle.bzl", "oracle_suite", "oracle_test")

oracle_suite(
    name = "oracles",
    srcs = glob(["*.toml"], exclude = ["policy.toml"]),
    blobs = glob(["blobs/**"]),
    policy = "policy.toml",
)

oracle_test(
    name = "oracle_test",
    suite = ":oracles",
    deps = ["//shop"],
)
"""

POLICY = """\
schema = 1
label = "oracle-change"
protected = ["oracles/**", "MODULE.bazel", "WORKSPACE", ".bazelrc", "BUILD.bazel"]
production_packages = ["shop"]
"""

BLOB = json.dumps([{"args": [q, p], "expected": q * p} for q, p in ((0, 5), (1, 99), (3, 250), (7, 1))],
                  indent=1) + "\n"

ORACLE = """\
schema = 1

[[invariant]]
id = "line_total_exact"
entry = "shop.prices:line_total_cents"
kind = "exact_table"
blob = "oracles/blobs/line_totals.json"
blob_sha256 = "{digest}"
"""

HARNESS_BUILD = """\
load("@oracle_gate//tools/bazel:python.bzl", "py_test")

py_test(
    name = "smoke_test",
    size = "small",
    srcs = ["smoke_test.py"],
    deps = ["//shop"],
)
"""

HARNESS_TEST = """\
from shop.prices import line_total_cents

assert line_total_cents(2, 3) >= 0
"""


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Runs `cmd` in `cwd`, output captured, without ORACLE_GATE_BAZEL_CONFIG (the generated
    repository's .bazelrc has no configs)."""
    env = {k: v for k, v in os.environ.items() if k != "ORACLE_GATE_BAZEL_CONFIG"}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def git(repo: Path, *args: str) -> None:
    """Runs a git command in `repo` as a fixed author; raises CalledProcessError when it fails."""
    env = dict(os.environ, GIT_AUTHOR_NAME="Shop", GIT_AUTHOR_EMAIL="shop@example.com",
               GIT_COMMITTER_NAME="Shop", GIT_COMMITTER_EMAIL="shop@example.com")
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def write(repo: Path, files: dict[str, str]) -> None:
    """Writes `files` (repository-relative path -> text) under `repo`."""
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def copy_gate(dest: Path) -> None:
    """Copies this checkout's files (tracked and untracked, as they are in the work tree, without
    ignored ones) to `dest`. Bazel 7's sandbox mounts an empty /tmp, so a repository under /tmp (a
    CI clone, say) cannot be another repository's `local_path_override`; the copy lies elsewhere."""
    listed = subprocess.run(["git", "-C", str(GATE), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        source, target = GATE / rel, dest / rel
        if not source.is_symlink() and not source.is_file():
            continue  # deleted in the work tree
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)


def generate(repo: Path, mode: str, gate_copy: Path) -> None:
    """Writes and commits the `shop` repository on `main` for `mode` ("bzlmod" or "workspace"),
    using the oracle-gate copy at `gate_copy`; its manifest is made by the gate itself."""
    git(repo, "init", "-q", "-b", "main")
    write(repo, {
        "MODULE.bazel" if mode == "bzlmod" else "WORKSPACE":
            (MODULE if mode == "bzlmod" else WORKSPACE).format(gate=gate_copy),
        ".bazelrc": BAZELRC[mode].format(gate=gate_copy) + BAZELRC_COMMON,
        "BUILD.bazel": "",
        ".gitignore": "/bazel-*\n",
        "shop/__init__.py": "",
        "shop/BUILD.bazel": SHOP_BUILD,
        "shop/prices.py": PRICES,
        "oracles/BUILD.bazel": ORACLES_BUILD,
        "oracles/policy.toml": POLICY,
        "oracles/blobs/line_totals.json": BLOB,
        "oracles/shop.toml": ORACLE.format(digest=hashlib.sha256(BLOB.encode()).hexdigest()),
        "harness/BUILD.bazel": HARNESS_BUILD,
        "harness/smoke_test.py": HARNESS_TEST,
    })
    proc = gate(repo, "manifest", "--write")
    if proc.returncode != 0:
        raise SystemExit(f"module test: `manifest --write` failed: {proc.stderr.strip()}")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "shop")


def gate(repo: Path, *args: str, gate_copy: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Runs the gate of this checkout on `repo` with the arguments `args` (a subcommand and its
    options); returns the finished process, output captured. The clean run's sealed root shows
    `gate_copy`, the oracle-gate the repository depends on by local path
    (ORACLE_GATE_SEAL_READ_ONLY)."""
    cmd = [sys.executable, "-B", "-m", "tools.oracle_gate", "--repo", str(repo), *args]
    if gate_copy is not None:
        cmd = ["env", f"ORACLE_GATE_SEAL_READ_ONLY={gate_copy}", *cmd]
    return run(cmd, GATE)


def change(repo: Path, branch: str, files: dict[str, str]) -> None:
    """Commits `files` on a new branch `branch` from main, and checks it out."""
    git(repo, "checkout", "-q", "-B", branch, "main")
    write(repo, files)
    git(repo, "commit", "-q", "-am", branch)


def main(argv: list[str]) -> int:
    """Runs every step; returns 0 when all saw what they expect, else 1 (2 for a bad command line)."""
    parser = argparse.ArgumentParser(prog="module_test.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("bzlmod", "workspace"), default="bzlmod",
                        help="how the generated repository uses oracle-gate (default: bzlmod)")
    mode = parser.parse_args(argv).mode
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    repo = cache / "oracle-gate" / f"module-test-{mode}"
    gate_copy = cache / "oracle-gate" / f"module-test-{mode}-oracle-gate"
    for path in (repo, gate_copy):
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
    failures = 0

    def expect(what: str, proc: subprocess.CompletedProcess[str], code: int, started: float, says: str = "") -> None:
        nonlocal failures
        ok = proc.returncode == code and says in proc.stdout + proc.stderr
        failures += not ok
        print(f"module test ({mode}): {'ok  ' if ok else 'FAIL'} {what}: exit {proc.returncode} (expected {code}"
              f"{', saying ' + repr(says) if says else ''}), {time.monotonic() - started:.0f} s", flush=True)
        if not ok:
            print((proc.stdout + proc.stderr)[-4000:], flush=True)

    try:
        copy_gate(gate_copy)
        generate(repo, mode, gate_copy)
        change(repo, "reword", {"shop/prices.py": PRICES.replace("in integer cents", "in whole cents")})
        started = time.monotonic()
        expect("bazel test //... (production-only change)", run(["bazel", "test", "//..."], repo), 0, started)
        started = time.monotonic()
        expect("check --clean (production-only change)",
               gate(repo, "check", "--clean", "--base", "main", gate_copy=gate_copy), 0, started,
               "1 of 1 invariant(s) passed")

        change(repo, "broken", {"shop/prices.py": BROKEN_PRICES})
        started = time.monotonic()
        expect("bazel test //... (broken production function)", run(["bazel", "test", "//..."], repo), 3, started)
        started = time.monotonic()
        expect("check (broken production function)", gate(repo, "check", "--base", "main"), 4, started,
               "line_total_exact")

        oracle = (repo / "oracles/shop.toml").read_text(encoding="utf-8")
        change(repo, "oracle-edit", {"oracles/shop.toml": oracle.replace('id = "line_total_exact"',
                                                                          'id = "line_total_exact"\n# loosened')})
        started = time.monotonic()
        expect("check (unlabelled oracle edit)", gate(repo, "check", "--base", "main"), 2, started,
               "oracles/shop.toml")
    finally:
        run(["bazel", "shutdown"], repo)
        for path in (repo, gate_copy):
            shutil.rmtree(path, ignore_errors=True)
    print(f"module test ({mode}): {'passed' if not failures else f'{failures} step(s) failed'}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
