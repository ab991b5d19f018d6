"""What `init` writes (init.py): the texts of its files and blocks, each a function of the
repository's `Setup`. docs/ci.md, "What init writes", explains every line."""

from __future__ import annotations

import json
import os
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from tools.oracle_gate.approval.policy import AGENT_FILES
from tools.oracle_gate.spec import kinds


@dataclass(frozen=True)
class Setup:
    """How the repository uses Bazel, as `init` writes for it.

    Attributes:
        mode: "workspace" or "bzlmod".
        bazel_major: the major version of the Bazel that runs it (4 or 7; 8 and later as 7), which
            decides the `.bazelrc` flags (Bazel 4.2 knows no `common --enable_workspace`).
        gate_path: the oracle-gate checkout as the dependency names it: relative to the repository
            (`../oracle-gate`), or what `--gate-path` gave.
        debian_rules: Debian's packaged rule sets are installed (`DEBIAN_RULES`): the offline
            stand-ins point at them.
    """

    mode: str
    bazel_major: int
    gate_path: str
    debian_rules: bool


MODULE_VERSION = "0.4.0"
RULES_PYTHON_VERSION = "0.22.1"

# The agent files every policy `init` writes protects (`policy.AGENT_FILES`).
AGENT_INSTRUCTIONS = AGENT_FILES

POLICY = """schema = 1
# The label a human puts on a pull request that may change the protected paths.
label = "oracle-change"
# Paths a change may touch only under the label. Always protected, whatever this list says:
# oracles/**, every .gitattributes (at the root and in any folder: attributes such as ident,
# filter, eol and working-tree-encoding decide the bytes a checkout writes, and the gate judges the
# committed bytes), .gitmodules, and what Bazel or its launcher reads before any sandbox
# exists: tools/bazel, .bazelversion, .bazeliskrc, .bazelrc, user.bazelrc, WORKSPACE,
# WORKSPACE.bazel, WORKSPACE.bzlmod, MODULE.bazel, MODULE.bazel.lock, REPO.bazel, .bazelignore, and
# the files and folders those name (rc imports, loaded .bzl files, local repositories).
# The CI definitions run the gate; the agent instruction files ({agents}) tell the next
# coding agent what to do, so an agent that rewrites them steers the agents after it. The
# production packages' BUILD and .bzl files decide which files and which Python path the gate's
# caller runs (a vendored copy, a precompiled .pyc, a module shadowing the standard library), so a
# human reviews those too; their .py files stay the change's to write.
protected = [
    "oracles/**",
    "**/.gitattributes",
    "BUILD.bazel",
    ".github/**",
    ".gitlab-ci.yml",
{agent_lines}
{package_lines}
]
# Top-level Python packages an oracle row's entry may name.
production_packages = [{packages}]
# A row with hidden samples (`hidden_sha256`) that `check --clean` cannot run (no store, --remote)
# fails the gate (exit 1) instead of passing with a note: "required" or "optional".
hidden = "required"
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


def _kind_comment() -> str:
    """The example row's comment naming every kind (`kinds.NAMES`), wrapped under its first line."""
    text = ", ".join(kinds.NAMES[:-1]) + f" or {kinds.NAMES[-1]}"
    return ("\n#" + " " * 41).join("# " + line for line in textwrap.wrap(text, 64))


EXAMPLE = f"""# An example oracle row. Copy it into oracles/NAME.toml (with `schema = 1` on top), write its
# blob, run the gate's `pin --write` (it adds the blob_sha256 line: `python3 -m tools.oracle_gate
# --repo PATH pin --write` in the oracle-gate checkout, or `bazel run @oracle_gate//tools:oracle_gate
# -- pin --write` here) and commit. Every change to oracles/ needs the policy's label, the one that
# adds the gate included: it adds the claims. Every field and kind: docs/oracles.md.
#
# schema = 1
#
# [[invariant]]
# id = "total_is_never_negative"
# entry = "shop.prices:total_cents"      # package.module:function, :Class.method or :Class
# kind = "bound"                          {_kind_comment()}
# min = 0
# max = 100_000_000                     # cents
# blob = "oracles/blobs/NAME/carts.json"  # a JSON array of samples: the keyword arguments
# seed = 1
#
# [invariant.generate]                    # optional: fresh samples on every check
# count = 100
# lines = {{ list = {{ int = [0, 10_000] }}, len = [0, 5] }}
"""

GITIGNORE = """# Bazel's output links: a plain `bazel test` makes them, and `check` judges a clean work tree.
/bazel-*
"""

GITATTRIBUTES = """# Everything under oracles/ is pinned by sha256: git writes the committed bytes in every checkout.
/oracles/** -text -eol -ident -filter -working-tree-encoding
"""

# Offline stand-ins for the repositories Bazel 4.2's built-in WORKSPACE suffix downloads even for
# a Python-only build: (name, path relative to the gate, or absolute).
WORKSPACE_STAND_INS = (
    ("rules_cc", "{gate}/third_party/rules_cc"),
    ("remote_coverage_tools", "{gate}/third_party/coverage_tools"),
    ("rules_java", "/usr/share/bazel/rules/java"),
)
# Bazel 7 in WORKSPACE mode: Debian's packaged rule sets for what its WORKSPACE suffix downloads.
BAZEL7_WORKSPACE_OVERRIDES = (
    ("bazel_skylib", "/usr/share/bazel/tools/skylib"),
    ("platforms", "/usr/share/bazel/tools/platforms"),
    ("rules_cc", "/usr/share/bazel/rules/cc"),
    ("rules_python", "/usr/share/bazel/rules/python"),
    ("rules_license", "/usr/share/bazel/rules/license"),
)


def repository_name(folder: str) -> str:
    """A module or workspace name from a folder name: lower case, `[a-z0-9_]`, starting with a
    letter (Bazel's rule for module names, which also suits `workspace(name = ...)`)."""
    name = re.sub(r"[^a-z0-9_]", "_", folder.lower())
    return name if name[:1].isalpha() else f"repo_{name}"


def label_folder(label: str) -> str:
    """The folder of the Bazel package a label of this repository names (`//src/shop:lib` ->
    `src/shop`; `init` takes only `//` labels), or "" for the root package. Raises nothing."""
    return label.removeprefix("//").split(":", 1)[0].strip("/") if label.startswith("//") else ""


def package_build_globs(packages: Sequence[str], deps: Sequence[str] = ()) -> list[str]:
    """The protected globs of the BUILD and .bzl files of each production package's folder and of
    each production `py_library` label's package folder (`label_folder`; a package under `src/`
    is found only that way), without duplicates (docs/threat-model.md: they choose what the
    caller runs)."""
    folders = dict.fromkeys([*packages, *(f for f in map(label_folder, deps) if f)])
    return [f"{p}/**/{name}" for p in folders for name in ("BUILD", "BUILD.bazel", "*.bzl")]


def policy(packages: Sequence[str], deps: Sequence[str] = ()) -> str:
    """oracles/policy.toml with `packages` as the production packages, whose BUILD and .bzl files
    it protects, with those of the packages of the labels `deps` (`package_build_globs`)."""
    return POLICY.format(
        agents=", ".join(AGENT_INSTRUCTIONS),
        agent_lines="\n".join(f'    "{p}",' for p in AGENT_INSTRUCTIONS),
        package_lines="\n".join(f'    "{glob}",' for glob in package_build_globs(packages, deps)),
        packages=", ".join(f'"{p}"' for p in packages),
    )


def oracles_build(deps: Sequence[str]) -> str:
    """oracles/BUILD.bazel with `deps` as the production py_library labels."""
    return BUILD.format(deps=", ".join(f'"{d}"' for d in deps))


def _declares(existing: str, name: str) -> bool:
    return re.search(rf"\bname\s*=\s*[\"']{re.escape(name)}[\"']", existing) is not None


def workspace_lines(setup: Setup, existing: str) -> str:
    """The WORKSPACE block: oracle-gate, the stand-ins `existing` does not declare yet, the Python
    rules and the system Python toolchain."""
    lines = [f'local_repository(name = "oracle_gate", path = "{setup.gate_path}")', ""]
    stand_ins = [(n, p.format(gate=setup.gate_path)) for n, p in WORKSPACE_STAND_INS if not _declares(existing, n)]
    if stand_ins:
        lines.append("# Offline stand-ins for repositories Bazel's own WORKSPACE suffix would download.")
        lines += [f'local_repository(name = "{n}", path = "{p}")' for n, p in stand_ins]
        lines.append("")
    lines += [
        'load("@oracle_gate//tools/bazel:workspace.bzl", "python_rules")',
        "",
        "python_rules()",
        "",
        "# The system Python 3 for every py_binary and py_test (Bazel 4.2 has no other).",
        'register_toolchains("@oracle_gate//tools/bazel/toolchains:python_toolchain")',
    ]
    return "\n".join(lines) + "\n"


def module_lines(setup: Setup, existing: str) -> str:
    """The MODULE.bazel block: rules_python (unless `existing` depends on it) and oracle-gate, by a
    path relative to the repository."""
    rules_python = (
        ""
        if _declares(existing, "rules_python")
        else f'bazel_dep(name = "rules_python", version = "{RULES_PYTHON_VERSION}")\n'
    )
    return (
        rules_python + f'bazel_dep(name = "oracle_gate", version = "{MODULE_VERSION}")\n'
        f'local_path_override(module_name = "oracle_gate", path = "{setup.gate_path}")\n'
    )


def bazelrc_lines(setup: Setup) -> str:
    """The .bazelrc block: the flags every mode needs, then those of the mode on Bazel 7 and later,
    then the offline stand-ins when Debian's packaged rule sets are installed."""
    lines = [
        "# Debian's /etc/bazel/bazelrc turns sandbox debugging on: it buries the real error.",
        "build --nosandbox_debug",
        "# Actions see a fixed PATH and no client environment.",
        "build --incompatible_strict_action_env",
        "test --test_output=errors",
    ]
    if setup.bazel_major >= 7 and setup.mode == "bzlmod":
        lines += [
            "# Bazel 8's defaults: no WORKSPACE (its suffix would download rules_cc), no lock file (it",
            "# records the overrides' paths and would be one more protected file to review).",
            "common --enable_bzlmod",
            "common --noenable_workspace",
            "common --lockfile_mode=off",
        ]
    elif setup.bazel_major >= 7:
        lines += ["common --enable_bzlmod=false", "common --enable_workspace"]
        if setup.debian_rules:
            lines.append("# Offline: Debian's packaged rule sets for what Bazel's WORKSPACE suffix downloads.")
            lines += [f"common --override_repository={n}={p}" for n, p in BAZEL7_WORKSPACE_OVERRIDES]
    return "\n".join(lines) + "\n"


# The repository the third-party distributions of the lock come from, as BUILD files load it.
PIP_REPOSITORY = "pypi"
DEPS_BEGIN = "# --- oracle-gate (init --requirements) ---"


def workspace_deps_lines(lock: str) -> str:
    """The WORKSPACE block that installs the lock `lock` (a label) as `@pypi`: the gate's
    `python_dependencies` (pip_lock_repository on Bazel 4.2, rules_python's pip_parse from a
    checked copy on Bazel 7), then `install_deps()`."""
    return (
        f'load("@oracle_gate_python_rules//:workspace.bzl", "python_dependencies")\n\n'
        f'python_dependencies(name = "{PIP_REPOSITORY}", lock = "{lock}")\n\n'
        f'load("@{PIP_REPOSITORY}//:requirements.bzl", "install_deps")\n\n'
        "install_deps()\n"
    )


def module_deps_lines(lock: str) -> str:
    """The MODULE.bazel block that installs the lock `lock` (a label) as `@pypi` with rules_python's
    pip extension, from a copy the gate's `checked_lock` extension makes only when the lock holds
    pins and hashes alone (rules_python would pass a pip option found in the lock on to pip)."""
    return (
        'checked_lock = use_extension("@oracle_gate//tools/bazel:extensions.bzl", "checked_lock")\n'
        f'checked_lock.lock(name = "{PIP_REPOSITORY}_lock", lock = "{lock}")\n'
        f'use_repo(checked_lock, "{PIP_REPOSITORY}_lock")\n\n'
        'pip = use_extension("@rules_python//python/extensions:pip.bzl", "pip")\n'
        "pip.parse(\n"
        f'    name = "{PIP_REPOSITORY}",\n'
        "    # Wheels only, and the interpreter on PATH: fetching builds and downloads nothing else.\n"
        '    extra_pip_args = ["--only-binary=:all:"],\n'
        '    python_interpreter = "python3",\n'
        f'    requirements_lock = "@{PIP_REPOSITORY}_lock//:requirements_lock.txt",\n'
        ")\n"
        f'use_repo(pip, "{PIP_REPOSITORY}")\n'
    )


def _starlark(value: object) -> str:
    """A str, list or dict of them as Starlark source (JSON's syntax is Starlark's for these)."""
    return json.dumps(value, ensure_ascii=True)


# The package's files that are not Python sources nor Bazel's: its data (`importlib.resources`,
# files opened beside `__file__`), in the library's runfiles.
DATA_GLOB = (
    'glob(["**/*"], exclude = ["**/*.py", "**/*.pyc", "**/__pycache__/**", "**/BUILD", "**/BUILD.bazel", "**/*.bzl"])'
)


def library_build(
    name: str,
    src_layout: bool,
    dists: Sequence[str],
    unknown: Sequence[str],
    metadata: DistMetadata | None = None,
    data: bool = False,
) -> str:
    """A production package's BUILD.bazel: one `py_library` named `name` over its `.py` files, with
    `imports = [".."]` under `src/`, `requirement(...)` of each locked distribution it imports
    (`dists`, normalized names), and, with `metadata`, a `py_dist_info` it depends on; `unknown`
    modules are named in a comment; `data`: the package holds other files (`DATA_GLOB`)."""
    rules = '"py_dist_info", "py_library"' if metadata else '"py_library"'
    loads = [f'load("@oracle_gate//tools/bazel:python.bzl", {rules})']
    own = [f'":{name}_dist"'] if metadata else []
    if dists:
        loads.append(f'load("@{PIP_REPOSITORY}//:requirements.bzl", "requirement")')
    lines = [
        *loads,
        "",
        "# The production package the oracle rows call (oracle-gate's init wrote it from the imports of its modules).",
        *([f"# Imported, but no locked distribution gives it: {', '.join(unknown)}."] if unknown else []),
        "py_library(",
        f'    name = "{name}",',
        '    srcs = glob(["**/*.py"]),',
        *([f"    data = {DATA_GLOB},"] if data else []),
        *(['    imports = [".."],'] if src_layout else []),
        *(
            [f"    deps = [{', '.join([*own, *(f'requirement({_starlark(d)})' for d in dists)])}],"]
            if dists or own
            else []
        ),
        '    visibility = ["//visibility:public"],',
        ")",
    ]
    if metadata:
        lines += [
            "",
            "# The distribution's metadata, for importlib.metadata.version() and entry_points() (from "
            f"{metadata.source}).",
            "py_dist_info(",
            f'    name = "{name}_dist",',
            f"    dist_name = {_starlark(metadata.name)},",
            f"    version = {_starlark(metadata.version)},",
            *([f"    entry_points = {_starlark(metadata.entry_points)},"] if metadata.entry_points else []),
            ")",
        ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class DistMetadata:
    """What `py_dist_info` gets: the distribution's name and version, its entry points (group ->
    `name = module:attr` lines), and where they were read (`pyproject.toml`, `--dist-name`)."""

    name: str
    version: str
    entry_points: dict[str, list[str]]
    source: str


# Where tools/bazel7/bazel7.sh's Debian sid root holds the newer pip and setuptools that rules_python
# 0.22.1's own fail without on sid's Python (docs/ci.md, "Bazel versions").
RULES_PYTHON_WHEELS = "/usr/local/share/oracle-gate/rules-python"


def bazelrc_deps_lines(setup: Setup) -> str:
    """The .bazelrc block for `init --requirements` on Bazel 7 and later, where RULES_PYTHON_WHEELS
    exists: rules_python's internal pip and setuptools from there (in bzlmod under both canonical
    name forms, Bazel 7's `~` and Bazel 8's `+`); "" when none is needed."""
    if setup.bazel_major < 7 or not os.path.isdir(RULES_PYTHON_WHEELS):
        return ""
    lines = ["# rules_python 0.22.1's own pip and setuptools fail on Debian sid's Python: newer ones."]
    prefixes = ("rules_python~~internal_deps~", "rules_python++internal_deps+") if setup.mode == "bzlmod" else ("",)
    for prefix in prefixes:
        lines += [
            f"common --override_repository={prefix}pypi__{name}={RULES_PYTHON_WHEELS}/pypi__{name}"
            for name in ("pip", "setuptools")
        ]
    return "\n".join(lines) + "\n"
