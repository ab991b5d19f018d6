"""`oracles/policy.toml` (docs/design.md section 3): label, protected path globs, production packages,
and what a modified production function that no row ran does (`uncovered_changes`, section 12)."""

from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass

from tools.oracle_gate.errors import OracleError
from tools.oracle_gate.git.tree import Entry, Tree
from tools.oracle_gate.spec.encoding import invisible_hint, text_problem

POLICY_PATH = "oracles/policy.toml"
_KEYS = {"schema", "label", "protected", "production_packages", "uncovered_changes", "hidden", "behaviour_changes"}
# `hidden`: whether `check --clean` must run every row's hidden samples (docs/oracles.md, "Hidden samples").
HIDDEN_OPTIONAL = "optional"
HIDDEN_REQUIRED = "required"
# `uncovered_changes`: a production function the change modified that no row's run entered is a
# note in the report (the default), or an exit-4 violation (docs/design.md section 12).
UNCOVERED_NOTE, UNCOVERED_FAIL = "note", "fail"
UNCOVERED_SETTINGS = (UNCOVERED_NOTE, UNCOVERED_FAIL)
# What a message calls a TOML value of each Python type tomllib gives.
_TOML_TYPES = {
    "bool": "a boolean",
    "int": "an integer",
    "float": "a float",
    "list": "an array",
    "dict": "a table",
    "datetime": "a date-time",
    "date": "a date",
    "time": "a time",
}
_PACKAGE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Packages an entry may never name: the gate, the harness, the oracles and the test runners.
_NOT_PRODUCTION = frozenset({"tools", "harness", "oracles", "third_party", "pytest", "_pytest", "runfiles"})
# Every `.gitattributes`, at the root and in any folder: its attributes decide the bytes a checkout
# writes (`ident`, `filter`, `eol`, `working-tree-encoding`), and the gate judges the committed
# bytes, so a human reads every attribute change (docs/design.md section 3).
ATTRIBUTES_GLOB = "**/.gitattributes"
# Paths that stay protected whatever a policy says: the oracles (policy included); the files that
# change how git checks out a path (every `.gitattributes`; `.gitmodules`); and every file
# Bazel or its launcher reads before any sandbox exists: the launcher's workspace wrapper
# `tools/bazel` (a file, a link or a folder of that name: Bazel's scripts/packages/bazel.sh runs it
# instead of Bazel), `.bazelversion` and `.bazeliskrc` (which Bazel the launcher or Bazelisk runs),
# the rc files (flags, `import` lines, `--workspace_status_command`), and the files that declare
# repositories and modules, whose repository rules run unsandboxed (docs/threat-model.md).
ALWAYS_PROTECTED = (
    "oracles/**",
    ATTRIBUTES_GLOB,
    ".gitmodules",
    "tools/bazel",
    "tools/bazel/**",
    ".bazelversion",
    ".bazeliskrc",
    ".bazelrc",
    "user.bazelrc",
    "WORKSPACE",
    "WORKSPACE.bazel",
    "WORKSPACE.bzlmod",
    "MODULE.bazel",
    "MODULE.bazel.lock",
    "REPO.bazel",
    ".bazelignore",
)
# Files coding agents read as instructions or settings (their own documentation names them), and
# the files `guard install` writes: an agent that may rewrite them can tell the next agent run what
# to do or switch the guard off, so a human reviews every change to them.
AGENT_FILES = (
    "AGENTS.md",
    "CLAUDE.md",
    ".claude/**",
    ".codex/**",
    ".cursor/**",
    ".github/copilot-instructions.md",
)
# The label and protected globs used when neither the base nor HEAD has a readable policy, so the gate
# fails closed (docs/design.md section 3). This is the one copy in code of the defaults: the
# repository's own `oracles/policy.toml` lists the same globs (a test compares the two), and a
# policy's `label` key defaults to DEFAULT_LABEL.
DEFAULT_LABEL = "oracle-change"
DEFAULT_PROTECTED = ALWAYS_PROTECTED + (
    "tools/**",
    "third_party/**",
    "BUILD",
    "BUILD.bazel",
    ".ci/**",
    "ci/**",
    ".github/**",
    ".gitlab-ci.yml",
    *AGENT_FILES,
)


@dataclass(frozen=True)
class Policy:
    """Human-owned gate settings.

    Attributes:
        label: the pull-request label that allows protected changes (default DEFAULT_LABEL,
            `oracle-change`).
        protected: repository-relative globs (see globs.py); `oracles/**` is always included.
        production_packages: top-level Python packages an oracle `entry` may name.
        uncovered_changes: UNCOVERED_NOTE (default) or UNCOVERED_FAIL: whether a production
            function the change modified that no row ran is a note or an exit-4 violation.
        hidden: HIDDEN_OPTIONAL (default) or HIDDEN_REQUIRED: whether a clean run that cannot run a
            row's hidden samples (no store, a file missing or wrong) is a note or exit 1.
        behaviour_changes: UNCOVERED_NOTE (default) or UNCOVERED_FAIL: whether a modified function
            whose results differ from the base tip's and that no row names (the behaviour diff,
            check/behaviour.py) is a note or, without the label, an exit-4 violation.
    """

    label: str
    protected: tuple[str, ...]
    production_packages: tuple[str, ...]
    uncovered_changes: str = UNCOVERED_NOTE
    hidden: str = HIDDEN_OPTIONAL
    behaviour_changes: str = UNCOVERED_NOTE


def parse_policy(data: bytes, path: str = POLICY_PATH) -> Policy:
    """Parses policy.toml bytes.

    Args:
        data: the file's bytes (UTF-8 TOML).
        path: repository-relative path, used in messages.

    Raises:
        OracleError: (exit 5) on bytes that are not clean UTF-8 text (a byte order mark, UTF-16,
            Latin-1, NUL or another control character, named in words by
            `encoding.text_problem`), bad TOML, unknown keys, wrong types or empty lists, or an
            `uncovered_changes` other than "note" or "fail" (`_uncovered_changes`), or a `hidden`
            other than "optional" or "required" (`_hidden`).
    """
    unreadable = text_problem(data, "TOML")
    if unreadable is not None:
        raise OracleError(unreadable, path=path)
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, ValueError, RecursionError) as exc:
        hint = invisible_hint(data.decode("utf-8"))
        raise OracleError(f"is not valid TOML: {exc}" + (f"; {hint}" if hint else ""), path=path) from None
    for key in sorted(set(doc) - _KEYS):
        raise OracleError(f"unknown key {key!r}; allowed: {', '.join(sorted(_KEYS))}", path=path, field=key)
    if doc.get("schema") != 1 or type(doc.get("schema")) is not int:
        raise OracleError("must be the integer 1", path=path, field="schema")
    label = doc.get("label", DEFAULT_LABEL)
    if type(label) is not str or not label.strip() or "," in label:
        raise OracleError("must be a non-empty string without commas", path=path, field="label")
    lists: dict[str, tuple[str, ...]] = {}
    for key in ("protected", "production_packages"):
        value = doc.get(key)
        if type(value) is not list or not value or not all(type(v) is str and v for v in value):
            raise OracleError("must be a non-empty array of non-empty strings", path=path, field=key)
        lists[key] = tuple(value)
    for pkg in lists["production_packages"]:
        if not _PACKAGE.fullmatch(pkg):
            raise OracleError(f"{pkg!r} is not a top-level Python package name", path=path, field="production_packages")
        if pkg in sys.stdlib_module_names or pkg in _NOT_PRODUCTION:
            raise OracleError(
                f"{pkg!r} is the standard library or the gate itself, not production code",
                path=path,
                field="production_packages",
            )
    for glob in lists["protected"]:
        if glob.startswith("/") or "\\" in glob:
            raise OracleError(f"{glob!r} must be a repository-relative glob", path=path, field="protected")
    protected = tuple(dict.fromkeys(ALWAYS_PROTECTED + lists["protected"]))
    return Policy(
        label=label.strip(),
        protected=protected,
        production_packages=lists["production_packages"],
        uncovered_changes=_uncovered_changes(doc, path),
        hidden=_hidden(doc, path),
        behaviour_changes=_uncovered_changes(doc, path, "behaviour_changes"),
    )


def load_policy(tree: Tree, entry: Entry | None, path: str = POLICY_PATH) -> Policy | None:
    """Parses a policy file (`policy.parse_policy`), or returns None when there is none (`entry` None).

    Args:
        tree: where to read the bytes.
        entry: the policy's entry in the tree, or None.
        path: its repository-relative path, used in messages.

    Raises:
        OracleError: (exit 5) when the policy exists but is invalid or not a regular file.
    """
    if entry is None:
        return None
    if not entry.is_regular:
        raise OracleError("must be a regular file", path=path)
    return parse_policy(tree.read(entry), path)


def _hidden(doc: dict[str, object], path: str) -> str:
    """The policy's `hidden`, HIDDEN_OPTIONAL when absent.

    Raises:
        OracleError: (exit 5) for any other value than "optional" or "required".
    """
    value = doc.get("hidden", HIDDEN_OPTIONAL)
    if value not in (HIDDEN_OPTIONAL, HIDDEN_REQUIRED):
        raise OracleError(
            f"must be {HIDDEN_OPTIONAL!r} or {HIDDEN_REQUIRED!r}, got {value!r}", path=path, field="hidden"
        )
    return str(value)


def _uncovered_changes(doc: dict[str, object], path: str, key: str = "uncovered_changes") -> str:
    """The policy's `uncovered_changes` (or the other "note"/"fail" setting `key`,
    `behaviour_changes`), UNCOVERED_NOTE when absent.

    Raises:
        OracleError: (exit 5) naming the file and the field, for any value but the strings
            "note" and "fail".
    """
    value = doc.get(key, UNCOVERED_NOTE)
    if type(value) is not str or value not in UNCOVERED_SETTINGS:
        shown = repr(value) if type(value) is str else _TOML_TYPES.get(type(value).__name__, "another TOML value")
        raise OracleError(f'must be "note" or "fail", not {shown}', path=path, field=key)
    return value


def label_name(base: Policy | None, head: Policy | None) -> str:
    """The label that allows protected changes: the base policy's (the change may not rename it),
    HEAD's when the base has no policy yet (bootstrap), else DEFAULT_LABEL."""
    if base is not None:
        return base.label
    return head.label if head is not None else DEFAULT_LABEL


def protection(base: Policy | None, head: Policy | None) -> tuple[str, tuple[str, ...]]:
    """The label name (`label_name`) and the protected globs: the base policy's plus anything
    HEAD's adds, duplicates dropped, in that order; DEFAULT_PROTECTED when neither policy is
    readable (fail closed)."""
    globs: tuple[str, ...] = ()
    for policy in (base, head):
        if policy:
            globs += policy.protected
    return label_name(base, head), tuple(dict.fromkeys(globs or DEFAULT_PROTECTED))


def in_labelled_change(label: str | None) -> str:
    """How a fix message says "in a change that carries the label": `in a change labelled NAME`
    when the caller knows the policy in force, else a phrase naming the policy's label and its
    default (a policy may rename the label)."""
    if label is not None:
        return f"in a change labelled {label}"
    return f"in a change carrying the policy's label ({DEFAULT_LABEL} by default)"


def has_label(label: str, labels: set[str]) -> bool:
    """True when `labels` holds `label`, compared case-insensitively as GitHub and GitLab do."""
    return label.casefold() in {x.casefold() for x in labels}
