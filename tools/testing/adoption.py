"""A team adopts the gate, end to end, with the `bazel` on PATH: from a git repository that holds
only the source of a library as it comes (a `pyproject.toml`, two third-party dependencies in a
`requirements.in`, `importlib.metadata.version` called at import, a `.gitignore` that ignores every
dotfile), through `init --requirements`, three oracle rows and `pin --write`, to the checks of
docs/ci.md, "Adopting the gate". No file of the library is edited by hand.

The repository (`shop`) and a copy of this checkout (`oracle-gate`, the dependency `init` writes as
`../oracle-gate`) are made side by side in `$XDG_CACHE_HOME/oracle-gate/adoption-<name>` (default
`~/.cache`; not /tmp, which Bazel 7's sandbox mounts empty), and removed at the end. Steps, each
with the exit code it must give:

1. `init --package shop --requirements requirements.in` writes MODULE.bazel or WORKSPACE and every
   block, the lock and `shop/BUILD.bazel` (0), with no absolute path of this machine, and every file
   it wrote is committable; a second `init` changes no byte;
2. the oracle rows (an exact table, a round trip with `conv=int`, a bound on a generated
   `(bool, int, int, bool)` tuple) and their blobs, `pin --write` (0), committed on main; a plain
   `bazel test //...` passes (0) and leaves nothing `check` refuses;
3. a production-only change: `check` (0) and `check --clean` (0), without any setting;
4. a broken production function: `check` (4, naming the id); a harness genrule that takes the
   gate's canary from the judge's views through a symlinked output folder: `check` (4, naming the
   trace: docs/design.md section 10);
5. a broken BUILD file of the production package: `check` (2 unlabelled: the policy `init` writes
   protects it; 4 with the label, naming the target);
6. an oracle edit without the label: `check` (2);
7. a base whose production package depends on an external repository that cannot be fetched:
   `check` (1, naming the repository);
8. a production package that raises on import: `check` (4, every row naming the import error), and
   `vacuity` saying the exception;
9. on main, `vacuity` (0, judging every row against mutants through Bazel) and `promote` of the
   generated tuple row (0, nothing fails).

Run: `python3 tools/testing/adoption.py --mode workspace|bzlmod [--flags-of-bazel-9]`; on Bazel 7
through `tools/bazel7/bazel7.sh --run`. It prints one line per step with its time and exits 0 when
every step gave what it must, else 1. `--flags-of-bazel-9` adds to the repository's `.bazelrc` the
incompatible flags whose defaults Bazel 8 and 9 flip (`FUTURE_FLAGS`; docs/adopting.md, "Bazel
versions").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

GATE = Path(__file__).resolve().parents[2]

# Flags whose default Bazel 8 or 9 flips, as their release notes list them, each of which Bazel
# 7.7.1 knows (`bazel help test`); `--noenable_workspace` is in init's .bazelrc block already.
# Bazel 9's --incompatible_disable_autoloads_in_main_repo and
# --incompatible_repo_env_ignores_action_env do not exist in 7.7.1 (docs/adopting.md).
FUTURE_FLAGS = (
    "common --incompatible_use_plus_in_repo_names",
    "common --incompatible_disallow_empty_glob",
    "common --incompatible_autoload_externally=",
    "common --incompatible_disable_native_repo_rules",
    "common --incompatible_enable_proto_toolchain_resolution",
    "common --incompatible_strict_action_env",
)

PRICES = '''"""Prices of the shop, in integer cents."""

import attr
from sortedcontainers import SortedList


@attr.s(frozen=True)
class Line:
    quantity = attr.ib()
    unit_price_cents = attr.ib()


def line_total_cents(quantity: int, unit_price_cents: int) -> int:
    """Returns quantity x unit price, in cents."""
    line = Line(quantity, unit_price_cents)
    return line.quantity * line.unit_price_cents


def render(amount, conv=str):
    """The amount as text, after `conv`."""
    return str(conv(amount))


def parse(text):
    """The amount `render` wrote."""
    return int(text)


def flagged_units(flags):
    """Units of a (gift, first, second, rush) tuple, sorted: at most 18."""
    if type(flags) is not tuple:
        raise TypeError("flags must be a tuple")
    gift, first, second, rush = flags
    return sum(SortedList([first, second])) if not gift else 0
'''

INIT = '''"""The shop library."""

import importlib.metadata

__version__ = importlib.metadata.version("shop")
'''

PYPROJECT = """[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "shop"
version = "1.4.0"
dependencies = ["attrs", "sortedcontainers"]
"""

BLOB = (
    json.dumps([{"args": [q, p], "expected": q * p} for q, p in ((0, 5), (1, 99), (3, 250), (7, 1))], indent=1) + "\n"
)
AMOUNTS = json.dumps([{"amount": a, "conv": {"callable": "builtins:int"}} for a in (0, 7, 1250)], indent=1) + "\n"
FLAGS = json.dumps([{"flags": [False, 2, 3, True]}, {"flags": [True, 9, 9, False]}], indent=1) + "\n"

ORACLE = """schema = 1

[[invariant]]
id = "line_total_exact"
entry = "shop.prices:line_total_cents"
kind = "exact_table"
blob = "oracles/blobs/shop/line_totals.json"

[[invariant]]
id = "render_round_trip"
entry = "shop.prices:render"
kind = "round_trip"
inverse = "shop.prices:parse"
blob = "oracles/blobs/shop/amounts.json"

[invariant.generate]
count = 20
amount = { int = [0, 1000000] }
conv = { choice = [{ callable = "builtins:int" }, { callable = "builtins:abs" }] }

[[invariant]]
id = "flagged_units_bound"
entry = "shop.prices:flagged_units"
kind = "bound"
min = 0
max = 18
build = { flags = "builtins:tuple" }
blob = "oracles/blobs/shop/flags.json"

[invariant.generate]
count = 30
flags = { tuple = [{ choice = [true, false] }, { int = [0, 9] }, { int = [0, 9] }, { choice = [true, false] }] }
"""
ROW_IDS = ("line_total_exact", "render_round_trip", "flagged_units_bound")

# An http_archive no machine can fetch, and the production package depending on it.
TAKE_CANARY = """genrule(
    name = "take",
    outs = ["take/.oracle-gate-canary"],
    cmd = "d=$$(pwd); ex=$${d%/sandbox/*}/execroot/$${d##*/}; rm -rf $(@D) && " +
          "ln -s $$ex/bazel-out/k8-fastbuild/bin/oracles/_sealed $(@D)",
)
"""
UNREACHABLE = {
    "workspace": ('load("@bazel_tools//tools/build_defs/repo:http.bzl", "http_archive")\n\n'),
    "bzlmod": ('http_archive = use_repo_rule("@bazel_tools//tools/build_defs/repo:http.bzl", "http_archive")\n\n'),
}
FAR = (
    'http_archive(\n    name = "far",\n    build_file_content = "filegroup(name = \\"x\\", srcs = [])",\n'
    '    sha256 = "' + "0" * 64 + '",\n    urls = ["https://far.invalid/far.tar.gz"],\n)\n'
)


class Adoption:
    """One adoption: the two folders, the steps' tally, and how to run git, Bazel and the gate."""

    def __init__(self, name: str, mode: str) -> None:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        self.root = cache / "oracle-gate" / f"adoption-{name}"
        self.repo, self.gate_copy, self.name, self.mode = self.root / "shop", self.root / "oracle-gate", name, mode
        self.failures = 0
        self.show = False
        self.env = {
            k: v for k, v in os.environ.items() if k not in ("ORACLE_GATE_BAZEL_CONFIG", "ORACLE_GATE_SEAL_READ_ONLY")
        }

    def run(self, cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
        """Runs `cmd` in `cwd` without the gate's configuration variables, output captured."""
        return subprocess.run(
            cmd, cwd=cwd, env=self.env, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL
        )

    def git(self, *args: str) -> None:
        """A git command in the repository as a fixed author; raises CalledProcessError on failure."""
        env = dict(
            self.env,
            GIT_AUTHOR_NAME="Shop",
            GIT_AUTHOR_EMAIL="shop@example.com",
            GIT_COMMITTER_NAME="Shop",
            GIT_COMMITTER_EMAIL="shop@example.com",
        )
        subprocess.run(["git", *args], cwd=self.repo, env=env, check=True, capture_output=True)

    def gate(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The gate of the oracle-gate copy on the repository."""
        return self.run(
            [sys.executable, "-B", "-m", "tools.oracle_gate", "--repo", str(self.repo), *args], self.gate_copy
        )

    def write(self, files: dict[str, str]) -> None:
        """Writes repository-relative files."""
        for rel, text in files.items():
            path = self.repo / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")

    def change(self, branch: str, files: dict[str, str], start: str = "main") -> None:
        """Commits `files` on a new branch `branch` from `start`, checked out."""
        self.git("checkout", "-q", "-B", branch, start)
        self.write(files)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", branch)

    def expect(self, what: str, step: Callable[[], subprocess.CompletedProcess[str]], code: int, says: str = "") -> str:
        """Runs `step` and prints one line: whether it exited `code` with `says` in its output."""
        started = time.monotonic()
        proc = step()
        output = proc.stdout + proc.stderr
        ok = proc.returncode == code and says in output
        self.failures += not ok
        print(
            f"adoption ({self.name}): {'ok  ' if ok else 'FAIL'} {what}: exit {proc.returncode} (expected {code}"
            f"{', saying ' + repr(says) if says else ''}), {time.monotonic() - started:.0f} s",
            flush=True,
        )
        if not ok:
            print(output[-6000:], flush=True)
        elif self.show:
            print(proc.stdout, flush=True)
        return proc.stdout


def copy_gate(dest: Path) -> None:
    """Copies this checkout's tracked and untracked files (not ignored ones) to `dest`."""
    listed = (
        subprocess.run(
            ["git", "-C", str(GATE), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, listed):
        source, target = GATE / rel, dest / rel
        if not source.is_symlink() and not source.is_file():
            continue  # deleted in the work tree
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` but `.git`'s, by relative path."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def set_up(a: Adoption, future: bool) -> None:
    """Steps 1 and 2: the production package, `init`, the row, `pin --write`, a plain `bazel test`."""
    a.git("init", "-q", "-b", "main")
    a.write(
        {
            "shop/__init__.py": INIT,
            "shop/prices.py": PRICES,
            "pyproject.toml": PYPROJECT,
            "requirements.in": "attrs\nsortedcontainers\n",
            ".gitignore": ".*\n",
        }
    )
    a.git("add", "-A", "--force")
    a.git("commit", "-q", "-m", "the shop library")
    # As docs/adopting.md writes it, from the gate's checkout, which has a requirements.in of its own.
    requirements = "requirements.in"
    a.expect(
        "init --requirements",
        lambda: a.gate("init", "--package", "shop", "--requirements", requirements, "--mode", a.mode),
        0,
        "init: wrote shop/BUILD.bazel",
    )
    written = snapshot(a.repo)
    machine = [rel for rel, data in written.items() if str(a.root).encode() in data or b"/root/" in data]
    if machine:
        a.failures += 1
        print(f"adoption ({a.name}): FAIL init wrote an absolute path of this machine into {', '.join(machine)}")
    a.git("add", "-A")
    ignored = a.run(["git", "ls-files", "--others", "--ignored", "--exclude-standard"], a.repo).stdout.split()
    if ignored:
        a.failures += 1
        print(f"adoption ({a.name}): FAIL git ignores what init wrote: {', '.join(ignored)}")
    a.expect(
        "init again", lambda: a.gate("init", "--package", "shop", "--requirements", requirements), 0, "nothing to do"
    )
    if snapshot(a.repo) != written:
        a.failures += 1
        print(f"adoption ({a.name}): FAIL the second init changed files")
    if future:
        with open(a.repo / ".bazelrc", "a", encoding="utf-8") as f:
            f.write("# The defaults of Bazel 8 and 9, simulated on Bazel 7.\n" + "\n".join(FUTURE_FLAGS) + "\n")
    a.write(
        {
            "oracles/shop.toml": ORACLE,
            "oracles/blobs/shop/line_totals.json": BLOB,
            "oracles/blobs/shop/amounts.json": AMOUNTS,
            "oracles/blobs/shop/flags.json": FLAGS,
        }
    )
    a.expect("pin --write", lambda: a.gate("pin", "--write"), 0)
    a.git("add", "-A")
    a.git("commit", "-q", "-m", "adopt the gate")
    a.expect("bazel test //...", lambda: a.run(["bazel", "test", "//..."], a.repo), 0)


def changes(a: Adoption) -> None:
    """Steps 3 to 7."""
    a.change("reword", {"shop/prices.py": PRICES.replace("in integer cents", "in whole cents")})
    a.expect("check (production-only change)", lambda: a.gate("check", "--base", "main"), 0, "gate ok")
    a.expect(
        "check --clean (production-only change)",
        lambda: a.gate("check", "--clean", "--base", "main"),
        0,
        "3 of 3 invariant(s) passed",
    )
    a.change(
        "broken",
        {
            "shop/prices.py": PRICES.replace(
                "line.quantity * line.unit_price_cents", "line.quantity * line.unit_price_cents - 1"
            )
        },
    )
    a.expect("check (broken production function)", lambda: a.gate("check", "--base", "main"), 4, "line_total_exact")
    # A harness genrule whose output folder becomes a link into the judge's views: Bazel's server,
    # outside the sandbox, moves the gate's canary there into the change's outputs.
    a.change("take", {"harness/BUILD.bazel": TAKE_CANARY})
    a.expect(
        "check (a harness genrule takes the judge's views' canary through a symlinked output folder)",
        lambda: a.gate("check", "--base", "main"),
        4,
        "which the gate protects",
    )
    shop_build = (a.repo / "shop/BUILD.bazel").read_text(encoding="utf-8")
    a.change("broken-build", {"shop/BUILD.bazel": shop_build.replace("deps = [", 'deps = [":gone", ')})
    a.expect(
        "check (unlabelled BUILD file of the production package)",
        lambda: a.gate("check", "--base", "main"),
        2,
        "shop/BUILD.bazel",
    )
    a.expect(
        "check (broken BUILD file, labelled)",
        lambda: a.gate("check", "--base", "main", "--label", "oracle-change"),
        4,
        "//shop:shop",
    )
    a.change(
        "oracle-edit",
        {"oracles/shop.toml": ORACLE.replace('id = "line_total_exact"', 'id = "line_total_exact"\n# loosened')},
    )
    a.expect("check (unlabelled oracle edit)", lambda: a.gate("check", "--base", "main"), 2, "oracles/shop.toml")
    control = "MODULE.bazel" if a.mode == "bzlmod" else "WORKSPACE"
    text = (a.repo / control).read_text(encoding="utf-8")
    a.git("checkout", "-q", "main")
    a.write(
        {
            control: text + "\n" + UNREACHABLE[a.mode] + FAR,
            "shop/BUILD.bazel": shop_build.replace(
                'srcs = glob(["**/*.py"]),', 'srcs = glob(["**/*.py"]),\n    data = ["@far//:x"],'
            ),
        }
    )
    a.git("add", "-A")
    a.git("commit", "-q", "-m", "a dependency nobody can fetch")
    a.change("on-a-broken-base", {"shop/prices.py": PRICES.replace("in integer cents", "in cents")})
    a.expect("check (a base that cannot fetch @far)", lambda: a.gate("check", "--base", "main"), 1, "far")
    a.git("checkout", "-q", "main")
    a.git("reset", "-q", "--hard", "HEAD~1")
    a.change(
        "import-error", {"shop/__init__.py": INIT + "\nfrom shop import prices\nraise ImportError('shop is broken')\n"}
    )
    out = a.expect(
        "check (the production package raises on import)",
        lambda: a.gate("check", "--base", "main"),
        4,
        "ImportError: shop is broken",
    )
    missing = [
        i for i in ROW_IDS if f"{i}: failed" not in out or out.count("ImportError: shop is broken") < len(ROW_IDS)
    ]
    if missing:
        a.failures += 1
        print(f"adoption ({a.name}): FAIL rows that did not name the import error: {', '.join(missing)}")
    a.expect(
        "vacuity (the production package raises on import)",
        lambda: a.gate("vacuity", "line_total_exact"),
        0,
        "cannot load entry shop.prices:line_total_cents: ImportError: shop is broken",
    )
    a.git("checkout", "-q", "main")
    a.expect("vacuity", lambda: a.gate("vacuity"), 0, "line_total_exact (shop.prices:line_total_cents): killed")
    a.expect(
        "promote (a generated tuple row)",
        lambda: a.gate("promote", "flagged_units_bound", "--salt", "adoption"),
        0,
        "flagged_units_bound: 0 of 30 generated sample(s) fail with salt adoption",
    )


def main(argv: list[str]) -> int:
    """Runs every step; returns 0 when all gave what they must, else 1 (2 for a bad command line)."""
    parser = argparse.ArgumentParser(prog="adoption.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("workspace", "bzlmod"), required=True)
    parser.add_argument("--show", action="store_true", help="print each step's standard output (the reports)")
    parser.add_argument(
        "--flags-of-bazel-9",
        action="store_true",
        dest="future",
        help="add the flags whose defaults Bazel 8 and 9 flip to the repository's .bazelrc",
    )
    args = parser.parse_args(argv)
    a = Adoption(args.mode + ("-bazel9-flags" if args.future else ""), args.mode)
    a.show = args.show
    shutil.rmtree(a.root, ignore_errors=True)
    a.repo.mkdir(parents=True)
    started = time.monotonic()
    try:
        copy_gate(a.gate_copy)
        set_up(a, args.future)
        changes(a)
    finally:
        a.gate("stop")  # the kept roots of the sealed workspace runs, with their servers
        a.run(["bazel", "shutdown"], a.repo)
        shutil.rmtree(a.root, ignore_errors=True)
    verdict = "passed" if not a.failures else f"{a.failures} step(s) failed"
    print(f"adoption ({a.name}): {verdict} in {time.monotonic() - started:.0f} s", flush=True)
    return 1 if a.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
