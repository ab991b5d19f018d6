"""`vacuity`: rows that check nothing. Each row runs against mutants of its entry function, through
the oracle test's own caller action built by Bazel on a copy of the work tree (`BazelRunner`,
authoring/bazel_rows.py: the row's suite, the production library's deps, the caller) and the
judge's functions, and a row that passes on every mutant is reported with the mutants it missed
(docs/oracles.md, "Rows that check nothing").

The mutants come from a small `ast` mutator, one change each inside the entry function: an
arithmetic operator swapped (`+` and `-`, `*` and `//`, ...), a comparison swapped (`<` and `<=`,
`==` and `!=`, ...), an integer constant moved by one, a boolean constant flipped. A well-kept
mutation tool (mutmut, cosmic-ray) mutates whole files and runs a test command per mutant; here
the "test" is one oracle row judged by the gate, and only the row's entry function is mutated,
which those tools do not offer as a unit. An entry whose body holds none of those (it only
delegates to another function, or returns what it is given) has no mutants of its own: its rows
are reported as such (`RowResult.no_mutants`), neither ok nor checking nothing, since nothing of
the entry was changed to see whether the row notices. `killing.py` turns the survivors into
samples that kill them (`vacuity --suggest`). Never run by `check`.
"""

from __future__ import annotations

import ast
import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tools.oracle_gate.authoring.bazel_rows import BazelRows
from tools.oracle_gate.authoring.reference_local import run_references
from tools.oracle_gate.errors import GateError
from tools.oracle_gate.spec import judgement, kinds
from tools.oracle_gate.spec.samples import load_samples
from tools.oracle_gate.spec.schema import Invariant
from tools.oracle_gate.spec.views import generated_view, split

SALT = "vacuity"  # fixed: the same generated samples for every mutant, and a replayable report

_BINOPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
    ast.Div: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
}
_CMPOPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}


@dataclass(frozen=True)
class Mutant:
    """One change to a module: where, what, and the mutated module's source."""

    line: int
    description: str
    source: str


@dataclass(frozen=True)
class RowResult:
    """A row against the mutants of its entry: which it killed (failed on) and which survived.

    Attributes:
        id, entry: the row's.
        mutants: how many mutants the entry has.
        survived: the mutants the row passed on.
        problem: why the row was not judged against mutants ("" when it was): it fails on the
            code as it is.
        killed: the mutants the row failed on.
        no_mutants: why the entry has no mutants of its own (`why_no_mutants`); "" when it has some.
    """

    id: str
    entry: str
    mutants: int
    survived: tuple[Mutant, ...]
    problem: str = ""
    killed: tuple[Mutant, ...] = ()
    no_mutants: str = ""

    @property
    def vacuous(self) -> bool:
        """True when the row passed on every mutant (and there was at least one)."""
        return not self.problem and self.mutants > 0 and len(self.survived) == self.mutants

    @property
    def verdict(self) -> str:
        """ "fails" (a problem), "no_mutants" (nothing of the entry to change), "checks_nothing"
        (`vacuous`) or "ok" (it killed at least one mutant)."""
        if self.problem:
            return "fails"
        if self.mutants == 0:
            return "no_mutants"
        return "checks_nothing" if self.vacuous else "ok"


def _sites(function: ast.AST) -> Iterator[tuple[ast.AST, Callable[[], str]]]:
    """Each mutable node of `function` with a function that mutates it in place and describes it."""
    for node in ast.walk(function):
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _BINOPS:

            def swap(n: ast.BinOp | ast.AugAssign = node) -> str:
                old = type(n.op)
                n.op = _BINOPS[old]()
                return f"{old.__name__} -> {type(n.op).__name__}"

            yield node, swap
        elif isinstance(node, ast.Compare):
            for k, op in enumerate(node.ops):
                if type(op) in _CMPOPS:

                    def flip(n: ast.Compare = node, i: int = k) -> str:
                        old = type(n.ops[i])
                        n.ops[i] = _CMPOPS[old]()
                        return f"{old.__name__} -> {type(n.ops[i]).__name__}"

                    yield node, flip
        elif isinstance(node, ast.Constant) and type(node.value) in (int, bool):

            def change(n: ast.Constant = node) -> str:
                old = n.value
                assert isinstance(old, int)  # bool is an int too
                n.value = (not old) if type(old) is bool else old + 1
                return f"{old!r} -> {n.value!r}"

            yield node, change


def mutants(source: str, function: str) -> list[Mutant]:
    """One mutant per mutable site of the function `function` of `source` (a module-level
    function, `Class.method`, or `Class` for its `__init__`: `_function`).

    Raises:
        GateError: (exit 1) when the source does not parse or has no such function.
    """
    try:
        count = len(list(_sites(_function(ast.parse(source), function))))
    except SyntaxError as exc:
        raise GateError(f"cannot parse the entry's module: {exc}") from None
    found = []
    for index in range(count):
        tree = ast.parse(source)
        node, mutate = list(_sites(_function(tree, function)))[index]
        description = mutate()
        found.append(Mutant(getattr(node, "lineno", 0), description, ast.unparse(tree) + "\n"))
    return found


def why_no_mutants(source: str, function: str) -> str:
    """Why the function `function` of `source` (as for `mutants`) has no mutants (`mutants` finds none):
    the functions its body calls, when it calls any ("the entry only delegates to ..."), else that
    its body holds nothing the mutation operators change.

    Raises:
        GateError: (exit 1) when the source does not parse or has no such function.
    """
    try:
        node = _function(ast.parse(source), function)
    except SyntaxError as exc:
        raise GateError(f"cannot parse the entry's module: {exc}") from None
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    funcs = sorted(
        (child.func for statement in node.body for child in ast.walk(statement) if isinstance(child, ast.Call)),
        key=lambda f: (f.end_lineno or 0, f.end_col_offset or 0),
    )
    calls: list[str] = []
    for func in funcs:
        name = _callee(func)
        if name not in calls:
            calls.append(name)
    if not calls:
        return (
            "its body has nothing the mutation operators change (no arithmetic or comparison, no int or bool constant)"
        )
    shown = ", ".join(calls[:3]) + (f" and {len(calls) - 3} more" if len(calls) > 3 else "")
    return f"the entry only delegates to {shown}: its body has nothing the mutation operators change"


def constants(source: str, function: str) -> list[int | float | str]:
    """The int, float and str constants of the function `function` of `source` (as for `mutants`),
    in source order, each once; no bool, no docstring. `vacuity --suggest` tries inputs at them.

    Raises:
        GateError: (exit 1) when the source does not parse or has no such function.
    """
    try:
        node = _function(ast.parse(source), function)
    except SyntaxError as exc:
        raise GateError(f"cannot parse the entry's module: {exc}") from None
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    body = node.body[1:] if ast.get_docstring(node) is not None else node.body
    found: list[int | float | str] = []
    for child in sorted(
        (c for statement in body for c in ast.walk(statement) if isinstance(c, ast.Constant)),
        key=lambda c: (c.lineno, c.col_offset),
    ):
        value = child.value
        if (
            isinstance(value, (int, float, str))
            and type(value) is not bool
            and not any(type(v) is type(value) and v == value for v in found)
        ):
            found.append(value)
    return found


def _callee(func: ast.expr) -> str:
    """A called expression as a name: `add`, `self.helper`, `Version.parse`; the method's name
    alone when it is called on a result (`parse(v).bump` -> `bump`)."""
    dotted = func
    while isinstance(dotted, ast.Attribute):
        dotted = dotted.value
    if isinstance(dotted, ast.Name) or not isinstance(func, ast.Attribute):
        return ast.unparse(func)
    return func.attr


def _function(tree: ast.Module, name: str) -> ast.AST:
    """The definition an entry's part after the colon names: a module-level function `f`, the
    method `m` of the module-level class `C` for `C.m`, and `C.__init__` for a class `C`.

    Raises:
        GateError: (exit 1) when the module has no such definition.
    """
    first, _, method = name.partition(".")
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == first and not method:
            return node
        if isinstance(node, ast.ClassDef) and node.name == first:
            wanted = method or "__init__"
            for child in node.body:
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and child.name == wanted:
                    return child
            raise GateError(f"class {first!r} of the entry's module defines no method {wanted!r}")
    raise GateError(f"no module-level function or class {first!r} in the entry's module")


def module_file(repo: str, entry: str) -> str:
    """The repository-relative file of an entry's module (`pkg/mod.py` or `pkg/mod/__init__.py`),
    at the root or under `src/` (the src layout).

    Raises:
        GateError: (exit 1) when none exists.
    """
    module = entry.split(":", 1)[0].replace(".", "/")
    for rel in (f"{module}.py", f"{module}/__init__.py", f"src/{module}.py", f"src/{module}/__init__.py"):
        if os.path.isfile(os.path.join(repo, rel)):
            return rel
    raise GateError(f"entry {entry}: no file {module}.py in the work tree, at its root or under src/")


class RowRunner(Protocol):
    """What runs a row's oracle file for the owners' tools: the observations document of the file
    `source`'s caller, its samples drawn with `salt`, on the work tree with `files` (relative path ->
    text) written over it. `BazelRows` is the one `vacuity` and `promote` use; tests substitute one."""

    def observe(self, source: str, salt: str, files: Mapping[str, str]) -> Any: ...


@contextlib.contextmanager
def open_runner(repo: str, environ: Mapping[str, str]) -> Iterator[RowRunner]:
    """The row runner of `vacuity` and `promote` on the work tree `repo`: a `BazelRunner` on a copy
    of it, closed (its Bazel shut down, the copy removed) when the block ends.

    Raises:
        GateError: (exit 1) as `BazelRows`.
    """
    with BazelRows(repo, environ) as rows:
        yield BazelRunner(rows)


class BazelRunner:
    """`RowRunner` through the oracle test's own caller action (`bazel_rows.BazelRows`)."""

    def __init__(self, rows: BazelRows) -> None:
        self.rows = rows

    def observe(self, source: str, salt: str, files: Mapping[str, str]) -> Any:
        """See `RowRunner`. Raises GateError (exit 1) when Bazel cannot build the observations."""
        self.rows.set_sources(files)
        return self.rows.observations(source, salt)


def judge_row(
    repo: str, inv: Invariant, oracle_bytes: bytes, blob: bytes, runner: RowRunner, mutant: Mutant | None, work: Path
) -> bool:
    """True when the row passes with `mutant` applied to its entry's module (None: as it is);
    `run_row` with vacuity's own salt. A caller that writes no readable observations (it crashed,
    timed out) is a failing row.

    Raises:
        GateError, OracleError: as `run_row`.
    """
    judged = run_row(repo, inv, oracle_bytes, blob, runner, mutant, work, SALT)
    return judged is not None and judged.ok


def run_row(
    repo: str,
    inv: Invariant,
    oracle_bytes: bytes,
    blob: bytes,
    runner: RowRunner,
    mutant: Mutant | None,
    work: Path,
    salt: str,
) -> judgement.Judgement | None:
    """Runs one row on the work tree's code and judges it: its Judgement, or None when the caller
    wrote no readable observations (it crashed or timed out).

    The row's oracle file runs through `runner` (the oracle test's caller action: the row's
    suite, the production library's deps, the caller and its limits), with the mutant written over
    its entry's module, on its blob samples and the samples drawn for `salt`; it is judged by the
    judge's own functions, here.

    Args:
        repo: the work tree.
        inv: the row; oracle_bytes: its oracle file's bytes; blob: its blob's bytes.
        runner: the row runner (`BazelRunner`).
        mutant: the mutant, or None for the code as it is.
        work: an empty folder this call may fill and reuse.
        salt: the salt the generated samples are drawn with.

    The row's reference, when it has one, runs from the work tree's `oracles/reference/` in a
    process of its own (`reference_local.run_references`).

    Raises:
        GateError: (exit 1) when the entry's module file is missing (`module_file`) or the runner
            cannot run the row; OracleError (exit 5) when the row's reference is broken.
    """
    files = {module_file(repo, inv.entry): mutant.source} if mutant is not None else {}
    observed = runner.observe(inv.source, salt, files)
    if type(observed) is not dict or type(observed.get("rows")) is not list:
        return None
    observations = dict(observed, rows=[r for r in observed["rows"] if type(r) is dict and r.get("id") == inv.id])
    inputs, expectations = split([(inv, load_samples(blob))])
    generated, _ = generated_view({inv.source: oracle_bytes}, salt)
    reference, problems = run_references(work / "reference", Path(repo), [(inv, load_samples(blob))], generated)
    if problems:
        raise problems[0]
    judged, _, _ = judgement.judge_all(expectations, observations, reference, generated)
    return next((j for j in judged if j.id == inv.id), None)


def _caller_trouble() -> str:
    """Why a row has no judgement: its caller wrote no readable observations."""
    return "the caller wrote no observations (it crashed or timed out; the oracle test's log says why)"


def check_row(
    repo: str,
    inv: Invariant,
    oracle_bytes: bytes,
    blob: bytes,
    runner: RowRunner,
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> RowResult:
    """Runs one row against every mutant of its entry; the row must pass on the code as it is.

    Args:
        repo: the work tree.
        inv: the row.
        oracle_bytes: its oracle file's bytes (for the generated samples).
        blob: its blob's bytes.
        runner: runs the row's oracle file (`BazelRunner`).
        progress: called with (mutants done, mutants in all).

    Returns:
        The RowResult: `problem` set when the row fails on the code as it is, `no_mutants` when
        the entry has no mutants of its own (the row is still run once on the code as it is).

    Raises:
        GateError: (exit 1) when the entry's module is missing, does not parse or has no such function.
    """
    path = module_file(repo, inv.entry)
    with open(os.path.join(repo, path), encoding="utf-8") as f:
        source = f.read()
    function = inv.entry.split(":", 1)[1]
    found = mutants(source, function)
    none = "" if found else why_no_mutants(source, function)
    with tempfile.TemporaryDirectory(prefix="vacuity-") as tmp:
        work = Path(tmp)
        as_is = run_row(repo, inv, oracle_bytes, blob, runner, None, work, SALT)
        if as_is is None or not as_is.ok:
            why = "; ".join(as_is.reasons[:3]) if as_is is not None and as_is.reasons else _caller_trouble()
            return RowResult(
                inv.id,
                inv.entry,
                len(found),
                (),
                f"the row fails on the code as it is ({why}); fix that first",
                no_mutants=none,
            )
        survived: list[Mutant] = []
        killed: list[Mutant] = []
        compared = kinds.kind(inv.kind).base_judged
        for index, mutant in enumerate(found):
            progress(index, len(found))
            if compared:
                # A row judged against the base tip: the mutant passes when it answers every sample
                # as the code as it is does (the same observation digest).
                seen = run_row(repo, inv, oracle_bytes, blob, runner, mutant, work, SALT)
                passed = seen is not None and seen.ok and seen.digest == as_is.digest
            else:
                passed = judge_row(repo, inv, oracle_bytes, blob, runner, mutant, work)
            (survived if passed else killed).append(mutant)
        progress(len(found), len(found))
    return RowResult(inv.id, inv.entry, len(found), tuple(survived), killed=tuple(killed), no_mutants=none)
