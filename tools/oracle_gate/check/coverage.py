"""The coverage signal (docs/design.md section 12): which production functions a change modified,
and which of them no row's run entered.

`changed_functions` takes the production `.py` files a change touched and finds, with
`functions.changed_in_file` (the syntax trees of both sides, function by function), every function,
method and nested function that is new, whose code differs (comments and formatting do not count)
or that is gone. `measure` holds the added and changed ones against the coverage records of the
oracle test's rows (spec/ran_record.py, read back by runs/results.py) and says which no row entered.

The records come from the change's own process, so `check` uses them to add a note, or, when the
policy says `uncovered_changes = "fail"`, exit-4 violations; never to pass anything
(docs/threat-model.md).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tools.oracle_gate import errors
from tools.oracle_gate.approval.policy import UNCOVERED_FAIL, UNCOVERED_NOTE, Policy
from tools.oracle_gate.errors import Violation
from tools.oracle_gate.git.functions import Found, changed_in_file, module_name
from tools.oracle_gate.runs.results import PASSED, Observed

# `functions.Found.status` of a function the change removed.
REMOVED = "removed"
# How many names a note lists before `and N more`.
MAX_NAMED = 10
# Why the coverage was not measured, for the note (`measure`'s `why`).
NOT_MEASURED_RESULTS = "the outcomes come from result files (--results), not from a run of the gate"
NOT_MEASURED_NOT_RUN = "Bazel did not run (protected paths changed without the label)"
NOT_MEASURED_INVALID = "the oracles are invalid, so no row was judged"
NOT_MEASURED_NO_RECORD = (
    "the oracle test's results carry no coverage record (no row ran, or the judge predates the record)"
)


def function_name(found: Found) -> str:
    """`module:qualname` of a changed function (a `functions.Found`), as the coverage record names it
    (`functions.module_name` of its path, then its qualified name). Raises nothing."""
    return f"{module_name(found.path)}:{found.name}"


def production_paths(paths: Iterable[str], packages: Iterable[str]) -> list[str]:
    """The `.py` files among `paths` that lie in one of the top-level `packages` (the first folder
    of the path), sorted, without duplicates. `paths` are repository-relative, `/`-separated;
    `packages` top-level package names. Raises nothing."""
    wanted = set(packages)
    return sorted({p for p in paths if p.endswith(".py") and p.split("/", 1)[0] in wanted})


def unread_packages(repo: str, packages: Iterable[str]) -> list[str]:
    """The `packages` that `production_paths` cannot read in the work tree `repo`: those with no
    folder of their name at its root (a package under `src/`), in the order given. Raises nothing."""
    return [name for name in packages if not os.path.isdir(os.path.join(repo, name))]


def not_read_note(packages: Sequence[str]) -> str:
    """The note `check` gives for `unread_packages`. Raises nothing."""
    return (
        f"changed functions: not measured for {', '.join(packages)}: no such folder at the repository's "
        "root (a production package outside it, as in a src/ layout, is not read; docs/adopting.md)"
    )


def changed_functions(repo: str, before: str, after: str, paths: Iterable[str], packages: Iterable[str]) -> list[Found]:
    """The production functions added, changed or removed between two commits: those of every
    `.py` file of `packages` among `paths` (`production_paths`), as `functions.changed_in_file`
    finds them (functions, methods and nested functions, compared as syntax trees).

    Args:
        repo: the repository.
        before: the base side's commit id (the base tip, or the merge base: `check` chooses).
        after: the judged commit's id (HEAD, or the merge result).
        paths: the paths that differ between them (git's diff).
        packages: the production packages whose files are compared.

    Returns:
        The functions of every such file, in path order, each file's in line order (removed ones
        after). Raises nothing: a file git cannot show at a commit counts as empty there, and one
        that does not parse at `after` gives none.
    """
    found: list[Found] = []
    for path in production_paths(paths, packages):
        found += changed_in_file(repo, before, after, path)[0]
    return found


def uncovered_setting(policies: Iterable[Policy | None]) -> str:
    """The stricter `uncovered_changes` of the policies given (the base tip's in force and the
    judged commit's): UNCOVERED_FAIL when any says so, else UNCOVERED_NOTE. A change cannot relax
    the setting it is judged by; a labelled change can tighten it for itself. `policies` may hold
    None for a commit without a readable policy. Raises nothing."""
    fail = any(p is not None and p.uncovered_changes == UNCOVERED_FAIL for p in policies)
    return UNCOVERED_FAIL if fail else UNCOVERED_NOTE


def _named(names: Sequence[str]) -> str:
    """The first MAX_NAMED names, comma-separated, then `and N more`."""
    shown = ", ".join(names[:MAX_NAMED])
    return shown + (f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else "")


@dataclass(frozen=True)
class Coverage:
    """What the coverage signal found for one check.

    Attributes:
        setting: the policy's `uncovered_changes` in force (UNCOVERED_NOTE or UNCOVERED_FAIL).
        modified: the functions the change added or changed, in path and line order, one per
            `module:qualname` (a property's getter and setter share one).
        removed: the functions it removed (never counted: nothing can run them).
        why: why the coverage was not measured, or "" when it was.
        uncovered: the modified functions no row's record names (all of them when not measured).
        unrecorded: the ids that passed without a coverage record (counted as running nothing).

    No method raises.
    """

    setting: str
    modified: tuple[Found, ...]
    removed: tuple[Found, ...] = ()
    why: str = ""
    uncovered: tuple[Found, ...] = ()
    unrecorded: tuple[str, ...] = ()

    @property
    def measured(self) -> bool:
        """True when the rows' records were read (`why` is empty)."""
        return not self.why

    def notes(self) -> list[str]:
        """The report's lines: the uncovered functions (and the passed ids without a record), or
        that the coverage was not measured; [] when every modified function ran."""
        if not self.measured:
            return [
                f"coverage: not measured ({self.why}); the change modified {len(self.modified)} production "
                f"function(s): {_named([function_name(f) for f in self.modified])}"
            ]
        if not self.uncovered:
            return []
        out = [
            f"coverage: the change modified {len(self.uncovered)} production function(s) no invariant ran: "
            f"{_named([function_name(f) for f in self.uncovered])}"
        ]
        if self.unrecorded:
            out.append(
                f"coverage: {len(self.unrecorded)} row(s) passed without a coverage record, counted as "
                f"running nothing: {_named(self.unrecorded)}"
            )
        return out

    def violations(self) -> list[Violation]:
        """One exit-4 violation per uncovered function when the setting is UNCOVERED_FAIL and the
        coverage was measured; else []. A coverage that was not measured never fails the gate."""
        if self.setting != UNCOVERED_FAIL or not self.measured:
            return []
        return [
            Violation(
                errors.NO_OUTCOME,
                f.path,
                "",
                f"{function_name(f)} ({f.status} at line {f.line}) was modified by the change and no invariant "
                'ran it; the policy says uncovered_changes = "fail": add or extend a row whose entry '
                "reaches it (a labelled change)",
            )
            for f in self.uncovered
        ]

    def detail(self) -> str:
        """The summary line's detail."""
        count = f"{len(self.modified)} modified production function(s)"
        if not self.measured:
            return f"{count}, coverage not measured"
        ran = len(self.modified) - len(self.uncovered)
        return f"{count}, {ran} run by an invariant (uncovered_changes = {self.setting!r})"

    def to_json(self) -> dict[str, Any]:
        """`--format json`'s `coverage`: setting, measured, why, modified (each name, path, line,
        status, ran: null when not measured), removed and uncovered (names), unrecorded (ids)."""
        missing = {function_name(f) for f in self.uncovered}
        return {
            "setting": self.setting,
            "measured": self.measured,
            "why": self.why,
            "modified": [
                {
                    "name": function_name(f),
                    "path": f.path,
                    "line": f.line,
                    "status": f.status,
                    "ran": function_name(f) not in missing if self.measured else None,
                }
                for f in self.modified
            ],
            "removed": [function_name(f) for f in self.removed],
            "uncovered": [function_name(f) for f in self.uncovered],
            "unrecorded": list(self.unrecorded),
        }


def measure(changed: Iterable[Found], observed: Mapping[str, Observed], *, setting: str, why: str = "") -> Coverage:
    """Holds the changed functions against the rows' coverage records.

    Args:
        changed: `changed_functions`.
        observed: id -> Observed of the oracle test (its `ran` records); ignored when `why` is set.
        setting: UNCOVERED_NOTE or UNCOVERED_FAIL (`uncovered_setting`).
        why: why the coverage cannot be measured (a NOT_MEASURED_* text), or "". When no
            observation has a record, it becomes NOT_MEASURED_NO_RECORD.

    Returns:
        The Coverage: a modified function is covered when some row's record names its
        `module:qualname`; a passed row without a record counts as running nothing. Raises nothing.
    """
    firsts: dict[str, Found] = {}
    removed: dict[str, Found] = {}
    for found in changed:
        (removed if found.status == REMOVED else firsts).setdefault(function_name(found), found)
    modified = tuple(firsts.values())
    gone = tuple(f for name, f in removed.items() if name not in firsts)
    records = {ident: found.ran for ident, found in observed.items()} if not why else {}
    if not why and all(ran is None for ran in records.values()):
        why = NOT_MEASURED_NO_RECORD
    if why:
        return Coverage(setting, modified, gone, why, modified)
    ran = {name for names in records.values() if names is not None for name in names}
    unrecorded = tuple(sorted(i for i, names in records.items() if names is None and observed[i].outcome == PASSED))
    return Coverage(setting, modified, gone, "", tuple(f for f in modified if function_name(f) not in ran), unrecorded)
