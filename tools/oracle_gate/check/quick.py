"""`check --quick` (docs/design.md section 13): the commit checks, the work tree's uncommitted
changes to protected paths, and the oracle test only when the change reached a row's entry, run on
the work tree as it is; no harness, clean run, hidden phase or behaviour phase. For an agent before
it pushes; the merge gate in CI runs everything.

A row is reached when the module of its entry (or of its `round_trip` inverse), or a production
module that module imports (directly or through others, `import` and `from ... import` read with
`ast`, relative imports resolved), changed since the merge base, committed or not. A changed
production file that is not a module of the work tree (data, a BUILD file, a module deleted or
renamed away) reaches every row of its package; byte-compiled caches reach nothing.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable

from tools.oracle_gate import errors
from tools.oracle_gate.approval.globs import matches
from tools.oracle_gate.check.findings import Findings
from tools.oracle_gate.check.inputs import Inputs
from tools.oracle_gate.errors import Violation
from tools.oracle_gate.git.worktree import differences

# `worktree.differences` entries: the path, then why in parentheses.
_ENTRY = re.compile(r"(.*) \((?:missing|committed as|bytes differ|untracked|ignored)", re.DOTALL)
# Production modules read for their imports, at most (a larger package reaches every row).
MAX_MODULES = 5_000


def uncommitted_paths(inputs: Inputs) -> list[str]:
    """The paths where the work tree differs from HEAD (`worktree.differences`), in its order."""
    out = []
    for entry in differences(inputs.repo, inputs.head.tree):
        found = _ENTRY.match(entry)
        out.append(found.group(1) if found else entry)
    return out


def check_uncommitted(inputs: Inputs, paths: list[str]) -> Findings:
    """Exit 2 for each uncommitted change to a protected path without the label: the quick run
    builds the work tree, so its oracles and gate must be what the commit checks read."""
    hits = [(path, matches(path, inputs.protected)) for path in paths]
    protected = [(path, glob) for path, glob in hits if glob is not None]
    found = (
        ()
        if inputs.labelled
        else tuple(
            Violation(
                errors.PROTECTED_PATH,
                path,
                "",
                f"protected by {glob!r} and changed in the work tree (not committed) "
                f"without the {inputs.label!r} label",
            )
            for path, glob in protected
        )
    )
    return Findings("uncommitted changes", found, f"{len(paths)} path(s) differ from HEAD, {len(protected)} protected")


def reached_rows(inputs: Inputs, paths: Iterable[str]) -> list[str]:
    """The ids of the judged oracles' rows whose entries the change reached (module docstring),
    from the paths changed since the merge base and `paths` (uncommitted), in row order."""
    policy = inputs.judged.oracles.policy or inputs.claims.oracles.policy
    packages = policy.production_packages if policy is not None else ()
    changed = {c.path for c in inputs.changes} | set(paths)
    touched = {
        p for p in changed if p.split("/", 1)[0] in packages and "__pycache__/" not in p and not p.endswith(".pyc")
    }
    modules = _modules(inputs.repo, packages)
    present = set(modules.values())
    whole = {p.split("/", 1)[0] for p in touched if p not in present}
    reached = {name for name, path in modules.items() if path in touched}
    if len(modules) >= MAX_MODULES:
        whole |= set(packages)
    importers = _importers(inputs.repo, modules)
    queue = list(reached)
    while queue:
        for importer in importers.get(queue.pop(), ()):
            if importer not in reached:
                reached.add(importer)
                queue.append(importer)
    out = []
    for row in inputs.judged.oracles.invariants:
        names = [n.split(":", 1)[0] for n in (row.entry, row.inverse) if n]
        if any(m in reached or m.split(".", 1)[0] in whole for m in names):
            out.append(row.id)
    return out


def _modules(repo: str, packages: Iterable[str]) -> dict[str, str]:
    """Dotted module name -> repository-relative path, for every `.py` file of the packages in the
    work tree (`pkg/__init__.py` is `pkg`), at most MAX_MODULES."""
    out: dict[str, str] = {}
    for package in packages:
        for folder, dirs, files in os.walk(os.path.join(repo, package)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            for name in sorted(files):
                if name.endswith(".py") and len(out) < MAX_MODULES:
                    rel = os.path.relpath(os.path.join(folder, name), repo).replace(os.sep, "/")
                    dotted = rel[: -len(".py")].replace("/", ".")
                    out[dotted.removesuffix(".__init__")] = rel
    return out


def _importers(repo: str, modules: dict[str, str]) -> dict[str, set[str]]:
    """Module -> the production modules that import it (a file that does not parse imports nothing)."""
    out: dict[str, set[str]] = {}
    for name, rel in modules.items():
        try:
            with open(os.path.join(repo, rel), "rb") as handle:
                tree = ast.parse(handle.read(), rel)
        except (OSError, SyntaxError, ValueError, RecursionError):
            continue
        package = name if rel.endswith("__init__.py") else name.rpartition(".")[0]
        for imported in _imported(tree, package):
            for candidate in (imported, imported.rpartition(".")[0]):
                if candidate in modules:
                    out.setdefault(candidate, set()).add(name)
    return out


def _imported(tree: ast.AST, package: str) -> list[str]:
    """The dotted names a module imports: `import a.b` gives a.b (and a); `from a import b` gives
    a and a.b; relative imports are resolved against `package`."""
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                out.extend(".".join(parts[: i + 1]) for i in range(len(parts)))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)] if node.level > 1 else anchor
                base = ".".join([*anchor, *([base] if base else [])])
            out.append(base)
            out.extend(f"{base}.{alias.name}" for alias in node.names)
    return out
