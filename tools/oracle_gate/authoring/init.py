"""`init`: adds the gate to an existing Bazel repository, idempotently (docs/ci.md, "Adopting the gate").

It writes what is missing and leaves what is there:
- `oracles/policy.toml` (the label, the protected paths, the production packages given),
  `oracles/BUILD.bazel` (`oracle_suites` over the oracle files, one test per file),
  `oracles/example.toml.sample` (a commented example row; not an oracle file until renamed),
  and `oracles/MANIFEST.sha256`, generated;
- the dependency on oracle-gate in `MODULE.bazel` (bzlmod) or `WORKSPACE`, and a `.bazelrc`
  block, each between marker lines, so a second run finds them and changes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from tools.oracle_gate.errors import GateError, UsageError
from tools.oracle_gate.suite.manifest import write_manifest
from tools.oracle_gate.git.tree import WorkTree

BEGIN = "# --- oracle-gate (init) ---"
END = "# --- end oracle-gate ---"
MODULE_VERSION = "0.4.0"
RULES_PYTHON_VERSION = "0.22.1"

POLICY = """schema = 1
# The label a human puts on a pull request that may change the protected paths.
label = "oracle-change"
# Paths a change may touch only under the label. Always protected, whatever this list says:
# oracles/**, .gitattributes, .gitmodules, and what Bazel or its launcher reads before any sandbox
# exists: tools/bazel, .bazelversion, .bazeliskrc, .bazelrc, user.bazelrc, WORKSPACE,
# WORKSPACE.bazel, WORKSPACE.bzlmod, MODULE.bazel, MODULE.bazel.lock, REPO.bazel, .bazelignore, and
# the files and folders those name (rc imports, loaded .bzl files, local repositories).
protected = ["oracles/**", "BUILD.bazel", ".github/**", ".gitlab-ci.yml"]
# Top-level Python packages an oracle row's entry may name.
production_packages = [{packages}]
"""

BUILD = """load("@oracle_gate//tools/bazel:oracle.bzl", "oracle_suites")

# One suite and one oracle test per oracle file (docs: "Many oracle files"); a file's own blobs go
# under blobs/<file name>/. Add the production py_library targets the rows' entries live in.
oracle_suites(
    name = "oracle_tests",
    srcs = glob(["*.toml"], exclude = ["policy.toml"]),
    blobs = glob(["blobs/**"]),
    policy = "policy.toml",
    deps = [{deps}],
)

exports_files(["policy.toml", "MANIFEST.sha256"])
"""

EXAMPLE = """# An example oracle row. Copy it into oracles/NAME.toml (with `schema = 1` on top), write its
# blob, run `oracle_gate pin --write` (it adds the blob_sha256 line), and commit under the label.
#
# schema = 1
#
# [[invariant]]
# id = "total_is_never_negative"
# entry = "shop.prices:total_cents"      # package.module:function of a production package
# kind = "bound"                          # bound, idempotent or exact_table
# min = 0
# max = 100_000_000                     # cents
# blob = "oracles/blobs/NAME/carts.json"  # a JSON array of samples: the keyword arguments
# seed = 1
"""

MODULE_LINES = """bazel_dep(name = "rules_python", version = "{rules_python}")
bazel_dep(name = "oracle_gate", version = "{version}")
local_path_override(module_name = "oracle_gate", path = "{gate}")
"""

WORKSPACE_LINES = """local_repository(name = "oracle_gate", path = "{gate}")

load("@oracle_gate//tools/bazel:workspace.bzl", "python_rules")

python_rules()
"""

BAZELRC_LINES = """build --incompatible_strict_action_env
test --test_output=errors
"""


@dataclass
class InitResult:
    """What `init` did: the files it wrote or extended, and those it found already set up."""

    written: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def _block(text: str) -> str:
    return f"{BEGIN}\n{text.rstrip()}\n{END}\n"


def _write_new(repo: str, rel: str, text: str, result: InitResult) -> None:
    path = os.path.join(repo, rel)
    if os.path.lexists(path):
        result.kept.append(rel)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    result.written.append(rel)


def _append_block(repo: str, rel: str, text: str, result: InitResult, create: bool) -> None:
    path = os.path.join(repo, rel)
    existing = ""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            existing = f.read()
    elif not create:
        return
    if BEGIN in existing:
        result.kept.append(rel)
        return
    separator = "" if not existing or existing.endswith("\n\n") else ("\n" if existing.endswith("\n") else "\n\n")
    with open(path, "a", encoding="utf-8", newline="\n") as f:
        f.write(separator + _block(text))
    result.written.append(rel)


def init(repo: str, gate_root: str, packages: Sequence[str], deps: Sequence[str]) -> InitResult:
    """Adds the gate to the Bazel repository `repo`; see the module doc.

    Args:
        repo: the repository's root (a git work tree with `WORKSPACE`, `WORKSPACE.bazel` or `MODULE.bazel`).
        gate_root: the oracle-gate checkout the dependency points at (absolute).
        packages: production packages for the policy (may be empty: fill it in later).
        deps: production `py_library` labels for the oracle tests.

    Raises:
        UsageError: (exit 1) when `repo` is not a Bazel repository, or a package or label is malformed.
        GateError: (exit 1) when a file cannot be written.
    """
    bzlmod = os.path.exists(os.path.join(repo, "MODULE.bazel"))
    workspace = next((n for n in ("WORKSPACE.bazel", "WORKSPACE") if os.path.exists(os.path.join(repo, n))), None)
    if not bzlmod and workspace is None:
        raise UsageError(f"{repo} has no MODULE.bazel or WORKSPACE: run init in a Bazel repository's root")
    for package in packages:
        if not package.isidentifier():
            raise UsageError(f"--package {package!r} is not a Python package name")
    for label in deps:
        if not label.startswith("//") or '"' in label or "\\" in label:
            raise UsageError(f"--dep {label!r} is not a label such as //shop")
    result = InitResult()
    try:
        _write_new(repo, "oracles/policy.toml", POLICY.format(packages=", ".join(f'"{p}"' for p in packages)), result)
        _write_new(repo, "oracles/BUILD.bazel", BUILD.format(deps=", ".join(f'"{d}"' for d in deps)), result)
        _write_new(repo, "oracles/example.toml.sample", EXAMPLE, result)
        if bzlmod:
            _append_block(repo, "MODULE.bazel", MODULE_LINES.format(rules_python=RULES_PYTHON_VERSION,
                                                                    version=MODULE_VERSION, gate=gate_root), result,
                          create=False)
        else:
            assert workspace is not None
            _append_block(repo, workspace, WORKSPACE_LINES.format(gate=gate_root), result, create=False)
        _append_block(repo, ".bazelrc", BAZELRC_LINES, result, create=True)
        manifest = os.path.join(repo, "oracles", "MANIFEST.sha256")
        if os.path.exists(manifest) and not result.written:
            result.kept.append("oracles/MANIFEST.sha256")
        else:
            write_manifest(WorkTree(repo))
            result.written.append("oracles/MANIFEST.sha256")
    except OSError as exc:
        raise GateError(f"init could not write in {repo}: {exc}") from None
    return result
