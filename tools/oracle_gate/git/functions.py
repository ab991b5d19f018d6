"""Which functions of a Python file a change added, changed or removed, read from two commits.

`changed_in_file` parses both sides of one file and compares them function by function: every
function, method and nested function that is new, whose code differs (`ast.dump`, so comments and
formatting do not count) or that is gone. `module_name` is the one spelling of a file's module.
`propose` (authoring/propose.py) and the coverage signal of `check` (check/coverage.py) both read
changes this way.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.git.gitio import git

# The statement a module-level `def` sits in, when it is not a top-level statement itself.
_BLOCKS = {
    ast.If: "if",
    ast.Try: "try",
    ast.TryStar: "try",
    ast.With: "with",
    ast.AsyncWith: "with",
    ast.For: "for",
    ast.AsyncFor: "for",
    ast.While: "while",
    ast.Match: "match",
}

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Found:
    """A function or method of a changed production file whose code a change added, changed or
    removed.

    Attributes:
        path: the file, repository-relative.
        module: the file's module as a row's entry names it (`module_name` with `entry`).
        name: the qualified name, as `__qualname__` spells it: `add`, `Version.bump_major`,
            `outer.<locals>.inner`.
        line: the `def`'s 1-based line at HEAD (at the merge base for a removed one).
        status: "added", "changed" or "removed".
        scope: "" for a top-level `def` of the module; else where it is defined: "a method of class
            Version", "nested in function outer", "inside a module-level `if` block".
        node: the `def` at HEAD, or None for a removed one.
    """

    path: str
    module: str
    name: str
    line: int
    status: str
    scope: str
    node: FunctionNode | None

    @property
    def entry(self) -> str:
        """`module:name`: a row's entry when the function is module-level, a display name otherwise."""
        return f"{self.module}:{self.name}"


def functions(source: str) -> list[tuple[str, str, FunctionNode]]:
    """(qualified name, scope, node) of every function and method of a module, in source order.

    The scope is "" for a top-level `def`, else where it is defined (see `Found.scope`).

    Raises:
        SyntaxError, ValueError: when the source does not parse.
    """
    return list(_defs(ast.parse(source).body, "", ""))


def _defs(nodes: Iterable[ast.AST], prefix: str, scope: str) -> Iterator[tuple[str, str, FunctionNode]]:
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + node.name
            yield name, scope, node
            yield from _defs(node.body, f"{name}.<locals>.", f"nested in function {name}")
        elif isinstance(node, ast.ClassDef):
            name = prefix + node.name
            yield from _defs(node.body, f"{name}.", f"a method of class {name}")
        else:
            block = _BLOCKS.get(type(node))
            inner = scope or (f"inside a module-level `{block}` block" if block else scope)
            yield from _defs(ast.iter_child_nodes(node), prefix, inner)


def _keyed(defs: Iterable[tuple[str, str, FunctionNode]]) -> dict[tuple[str, int], tuple[str, FunctionNode]]:
    """(name, n-th definition of that name) -> (scope, node): a property's getter and setter apart."""
    seen: Counter[str] = Counter()
    keyed = {}
    for name, scope, node in defs:
        keyed[(name, seen[name])] = (scope, node)
        seen[name] += 1
    return keyed


def module_name(path: str, *, entry: bool = False) -> str:
    """The module a production file is, as its `__name__` when imported (the coverage record's
    spelling): `billing/tax.py` -> `billing.tax`, a package's `__init__.py` -> the package
    (`shop/sub/__init__.py` -> `shop.sub`, `shop/__init__.py` -> `shop`). With `entry`, a
    top-level package's `__init__.py` keeps its module part (`shop.__init__`): a row's entry needs
    one (docs/oracles.md, "Oracle rows"). `path` is repository-relative and `/`-separated, a
    trailing `.py` dropped. Raises nothing."""
    parts = path.removesuffix(".py").split("/")
    if parts[-1] == "__init__" and len(parts) > (2 if entry else 1):
        parts = parts[:-1]
    return ".".join(parts)


def _show(repo: str, commit: str, path: str) -> str | None:
    try:
        return git(repo, "show", f"{commit}:{path}").decode("utf-8", "replace")
    except GateError:
        return None


def changed_in_file(repo: str, base: str, head: str, path: str) -> tuple[list[Found], str]:
    """The functions and methods of one file whose code differs between `base` and `head`.

    Args:
        repo: the repository.
        base, head: commit ids.
        path: a repository-relative `.py` file (it may be missing at either commit).

    Returns:
        (found, note): the added, changed and removed functions in line order (removed ones after),
        and a line saying why the file yielded none ("" when it yielded some).

    Never raises: a file git cannot show at a commit (it is missing there) counts as empty there.
    """
    new_source, old_source = _show(repo, head, path), _show(repo, base, path)
    try:
        new = _keyed(functions(new_source or ""))
    except (SyntaxError, ValueError) as exc:
        where = f" (line {exc.lineno}: {exc.msg})" if isinstance(exc, SyntaxError) else ""
        return [], f"{path}: does not parse at HEAD{where}; no function read"
    try:
        old = _keyed(functions(old_source or ""))
    except (SyntaxError, ValueError):
        old = {}  # the merge base's file does not parse: everything at HEAD counts as added
    module, found = module_name(path, entry=True), []
    for key, (scope, node) in sorted(new.items(), key=lambda item: item[1][1].lineno):
        before = old.get(key)
        if before is None or ast.dump(before[1]) != ast.dump(node):
            status = "added" if before is None else "changed"
            found.append(Found(path, module, key[0], node.lineno, status, scope, node))
    for key, (scope, node) in sorted(old.items(), key=lambda item: item[1][1].lineno):
        if key not in new:
            found.append(Found(path, module, key[0], node.lineno, "removed", scope, None))
    if found:
        return found, ""
    if new_source is None:
        return [], f"{path}: deleted at HEAD; it held no function"
    return [], f"{path}: no function's or method's code changed (only module-level code, comments or formatting)"
