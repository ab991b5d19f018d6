"""`propose`: candidate oracle rows for the public production functions a change added or changed,
printed as TOML comments for a human to review (docs/oracles.md, "Proposing rows").

It reads the production diff only: files of the policy's `production_packages`, never `harness/`,
`oracles/` or the gate (a changed `.py` file outside them is named, not read). Every function and
method of those files whose code is new at HEAD, differs from the merge base's (compared as
`ast.dump`, so comments and formatting do not count) or is gone is listed, and each gets a
candidate row or the reason it gets none (`skip_reason`): a nested function or a method of a nested
class (an entry names a module-level function, or a method or constructor of a module-level
class), a `def` inside a module-level `if`/`try`/... block, a private
name, an entry the schema would refuse, a function removed at HEAD, or one that already has a row
in HEAD's oracle files. A candidate goes in the oracle file that already holds rows of its module
(else of its package, else `oracles/<package>.toml`) and its blob in that file's own folder,
`oracles/blobs/<file name>/` (docs/oracles.md, "Many oracle files"). Nothing is written: the rows
need a blob, a pin (`pin --write`) and a human's label.

With `--model-command`, an external command gets a fixed instruction and the diff on stdin and
answers with TOML rows; only rows that pass the oracle schema (closed kinds, an entry in a
production package) and carry no `blob_sha256` (a proposal never invents a pin) are printed.
"""

from __future__ import annotations

import ast
import posixpath
import shlex
import subprocess
import tomllib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tools.oracle_gate.approval.policy import POLICY_PATH
from tools.oracle_gate.errors import GateError
from tools.oracle_gate.git.functions import Found, FunctionNode, changed_in_file
from tools.oracle_gate.git.tree import Tree
from tools.oracle_gate.spec import kinds
from tools.oracle_gate.spec.schema import BLOB_DIR, ENTRY_PATTERN, KINDS, is_oracle_path, parse_oracle
from tools.oracle_gate.text import visible

# Seconds the model command may take.
MODEL_TIMEOUT_S = 300.0
# What the model command is told, before the diff.
INSTRUCTION = """\
You propose oracle rows for a merge gate. Below is a diff of production code.
Answer with TOML only: one [[invariant]] table per proposed row, with the keys
id, entry ("package.module:function", a module-level function), kind (bound,
idempotent or exact_table), blob ("oracles/blobs/FILE/NAME.json", FILE being
the oracle file the row goes in without .toml) and, for bound rows, min and
max; for idempotent rows, args and repeat. Never write blob_sha256: a human
pins blobs.
"""
# Parameter names that suggest a function that maps a state to a new state of the same kind.
_STATE_NAMES = ("state", "ledger", "cart", "doc", "document", "record", "items", "lines")
_IDEMPOTENT_WORDS = ("normalize", "normalise", "canonical", "dedupe", "clean", "refund", "apply_refund", "sort")
_NUMERIC_WORDS = ("total", "sum", "count", "amount", "cents", "price", "balance", "size", "len")


@dataclass(frozen=True)
class Row:
    """An `[[invariant]]` table of an oracle file as written, valid or not (a row not yet pinned
    still names its entry).

    Attributes:
        id: the row's `id`, or "" when it has no string id.
        entry: the row's `entry`, or "" when it has no string entry.
        source: the oracle file, repository-relative (`oracles/NAME.toml`).
        kind: the row's `kind`, or "" when it has no string kind.
    """

    id: str
    entry: str
    source: str
    kind: str = ""


@dataclass(frozen=True)
class Candidate:
    """A public function a change added or changed, and the row suggested for it.

    Attributes:
        entry: `package.module:function`.
        path: the file, repository-relative.
        line: the `def`'s 1-based line at HEAD.
        status: "added" or "changed".
        signature: the parameter list as written, e.g. "amount_cents, rate".
        kind: the suggested kind, one of KINDS whose `Kind.proposal` says what to suggest.
        reason: why that kind.
        id: the suggested id, unique among HEAD's rows and the other candidates.
        oracle_file: the oracle file suggested for the row (`oracles/NAME.toml`).
        receiver: the `receiver` to suggest for a method (`package.module:Class`), or "".
        placement: why that file, e.g. "it holds the rows of shop.calc".
        project: the `project` to suggest for a constructor, whose object is not plain JSON (TOML
            text such as `{ attrs = ["table"] }`), or "".
    """

    entry: str
    path: str
    line: int
    status: str
    signature: str
    kind: str
    reason: str
    id: str
    oracle_file: str
    placement: str
    receiver: str = ""
    project: str = ""

    @property
    def blob(self) -> str:
        """The suggested blob: `oracles/blobs/<oracle file name without .toml>/<id>.json`."""
        return blob_path(self.oracle_file, self.id)


@dataclass(frozen=True)
class Outcome:
    """What `propose` decided for one found function: a candidate, or why there is none.

    Attributes:
        found: the function.
        candidate: the suggested row, or None.
        reason: why there is no candidate ("" when there is one).
    """

    found: Found
    candidate: Candidate | None
    reason: str


@dataclass(frozen=True)
class Survey:
    """Everything `propose` found in the production diff.

    Attributes:
        outcomes: one per found function, in file then line order.
        notes: one line per changed production file that yielded no function (it does not parse
            at HEAD, or no function's code changed).
        paths: the changed production files read.
    """

    outcomes: tuple[Outcome, ...]
    notes: tuple[str, ...]
    paths: tuple[str, ...]

    @property
    def candidates(self) -> list[Candidate]:
        """The candidates, in file then line order."""
        return [o.candidate for o in self.outcomes if o.candidate is not None]


def blob_path(oracle_file: str, name: str) -> str:
    """`oracles/blobs/<oracle file name without .toml>/<name>.json`: a blob in the oracle file's own
    folder, the layout `init` sets up (an input of that file's suite alone under `oracle_suites`).

    Args:
        oracle_file: `oracles/NAME.toml`.
        name: the blob's file name without `.json`.
    """
    stem = posixpath.basename(oracle_file).removesuffix(".toml")
    return f"{BLOB_DIR}{stem}/{name}.json"


def suggest_kind(node: FunctionNode) -> tuple[str, str]:
    """(kind, reason) for a function, from its name, parameters and return annotation."""
    name = node.name.lower()
    params = [a.arg for a in node.args.args]
    returns = ast.unparse(node.returns) if node.returns is not None else ""
    if returns in ("int", "float") or any(w in name for w in _NUMERIC_WORDS):
        why = f"it returns `{returns}`" if returns else "its name suggests a quantity"
        return "bound", f"{why}; a bound states the range every result must stay in"
    if params and (params[0] in _STATE_NAMES or any(w in name for w in _IDEMPOTENT_WORDS)):
        return (
            "idempotent",
            f"its first parameter `{params[0]}` looks like a state it returns a new version of; "
            "applying it twice should change nothing more",
        )
    return "exact_table", "no range or idempotence suggests itself; a table pins known inputs to known outputs"


@dataclass(frozen=True)
class HeadRows:
    """The rows of HEAD's oracle files, as `head_rows` reads them.

    Attributes:
        rows: every `[[invariant]]` table, in file then row order.
        files: every oracle file (`oracles/NAME.toml`), rows or not.
        notes: one line per oracle file whose rows could not be read.
    """

    rows: tuple[Row, ...] = ()
    files: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def head_rows(tree: Tree) -> HeadRows:
    """The `[[invariant]]` tables of a tree's oracle files (`schema.is_oracle_path`), read as TOML
    without validation: a row written from a proposal but not yet pinned already names its entry.

    Args:
        tree: the tree to read `oracles/` from (HEAD's, for `propose`).

    Returns:
        HeadRows; a file that is not a regular file or not UTF-8 TOML adds a note, never an error.

    Raises:
        GateError: (exit 1) only when the tree cannot be read.
    """
    rows: list[Row] = []
    files: list[str] = []
    notes: list[str] = []
    for path, entry in sorted(tree.files("oracles").items()):
        if not is_oracle_path(path):
            continue
        files.append(path)
        if not entry.is_regular:
            notes.append(f"{path} is not a regular file; its rows are not known")
            continue
        try:
            table = tomllib.loads(tree.read(entry).decode("utf-8")).get("invariant", [])
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            notes.append(f"{path} is not readable TOML ({exc}); its rows are not known")
            continue
        for row in table if isinstance(table, list) else []:
            if isinstance(row, dict):
                ident, entry_name, kind = row.get("id"), row.get("entry"), row.get("kind")
                rows.append(
                    Row(
                        ident if isinstance(ident, str) else "",
                        entry_name if isinstance(entry_name, str) else "",
                        path,
                        kind if isinstance(kind, str) else "",
                    )
                )
    return HeadRows(tuple(rows), tuple(files), tuple(notes))


def _rows_naming(entry: str, rows: Sequence[Row]) -> str:
    """`a, b in oracles/x.toml; c in oracles/y.toml` for the rows whose entry is `entry`, or ""."""
    by_file: dict[str, list[str]] = {}
    for row in rows:
        if row.entry == entry:
            by_file.setdefault(row.source, []).append(row.id or "a row without an id")
    return "; ".join(f"{', '.join(ids)} in {path}" for path, ids in by_file.items())


def row_entry(found: Found) -> str:
    """The entry a row names for a found function: `module:function`, `module:Class.method`, or
    `module:Class` for a class's `__init__` (the constructor)."""
    entry = found.entry
    return entry[: -len(".__init__")] if entry.endswith(".__init__") and "." in entry.partition(":")[2] else entry


def skip_reason(found: Found, rows: Sequence[Row]) -> str:
    """Why a found function gets no candidate row, or "" when it gets one.

    The reasons, first match wins: removed at HEAD; a nested function or a method of a nested class
    (an entry names `package.module:function`, `package.module:Class.method` or the constructor
    `package.module:Class`); a `def` inside a module-level block
    (propose proposes top-level `def` statements only); a private name (leading underscore); an
    entry the schema's `ENTRY_PATTERN` refuses (a function of a top-level package's `__init__.py`);
    an entry some row of `rows` already names.

    Args:
        found: the function.
        rows: HEAD's oracle rows (`head_rows`).
    """
    named = _rows_naming(row_entry(found), rows)
    if found.status == "removed":
        return "removed at HEAD: nothing to propose" + (f"; rows still name it: {named}" if named else "")
    if found.scope.startswith("inside"):
        return (
            f"defined {found.scope}, not as a top-level statement: propose proposes top-level defs only "
            "(write its row by hand if the module always defines it)"
        )
    method = found.scope.startswith("a method of class ") and "." not in found.scope[len("a method of class ") :]
    if found.scope and not method:
        return f"{found.scope}: rows can name module-level functions and methods of module-level classes only"
    last = found.name.rsplit(".", 1)[-1]
    if last.startswith("_") and not (method and last == "__init__"):
        return "private (leading underscore)"
    entry = row_entry(found)
    if not ENTRY_PATTERN.fullmatch(entry):
        why = " (a top-level package's __init__.py has no module part)" if "." not in found.module else ""
        return f"`{entry}` is not of the form package.module:function, as a row's entry must be{why}"
    if named:
        return f"already has a row: {named}"
    return ""


def oracle_file_for(module: str, oracles: HeadRows) -> tuple[str, str]:
    """(oracle file, why) for a new row whose entry is in `module`: the file holding the most rows
    of that module, else of its top-level package, else `oracles/<package>.toml`.

    Args:
        module: a dotted module name, e.g. `shop.calc`.
        oracles: HEAD's oracle rows (`head_rows`).
    """
    top = module.split(".", 1)[0]
    matchers: tuple[tuple[str, Callable[[str], bool]], ...] = (
        (f"the rows of {module}", lambda m: m == module),
        (f"rows of package {top}", lambda m: m.split(".", 1)[0] == top),
    )
    for label, matches in matchers:
        counts = Counter(r.source for r in oracles.rows if matches(r.entry.split(":", 1)[0]))
        if counts:
            return min(counts, key=lambda path: (-counts[path], path)), f"it holds {label}"
    path = f"oracles/{top}.toml"
    if not is_oracle_path(path):  # a package named `policy`
        path = f"oracles/{top}_rows.toml"
    if path in oracles.files:
        return path, f"package {top}'s own oracle file"
    return path, f"a new oracle file for package {top}: start it with `schema = 1`"


def _proposal(name: str) -> kinds.Proposal:
    """What `propose` suggests for a row of the kind `name` (`Kind.proposal`).

    Raises:
        KeyError: for a kind it never suggests.
    """
    proposal = kinds.kind(name).proposal
    if proposal is None:
        raise KeyError(name)
    return proposal


def unique_id(wanted: str, taken: set[str]) -> str:
    """`wanted` (cut to 64 characters), or with `_2`, `_3`, ... when an id in `taken` has it; adds it."""
    ident, n = wanted[:64], 2
    while ident in taken:
        suffix = f"_{n}"
        ident, n = wanted[: 64 - len(suffix)] + suffix, n + 1
    taken.add(ident)
    return ident


def _receiver(found: Found) -> str:
    """The `receiver` line to suggest for a method: its class (the constructor builds the object),
    or "" for a function, a constructor, a staticmethod or a classmethod."""
    qualname = found.name
    node = found.node
    if "." not in qualname or qualname.endswith(".__init__") or node is None:
        return ""
    decorators = {ast.unparse(d) for d in node.decorator_list}
    if decorators & {"staticmethod", "classmethod"}:
        return ""
    return f"{found.module}:{qualname.rsplit('.', 1)[0]}"


def _project(found: Found) -> str:
    """The `project` to suggest for a constructor: the public attributes its `__init__` assigns on
    `self` (`{ attrs = [...] }`), else `"str"`; "" for any other function."""
    node = found.node
    if not found.name.endswith(".__init__") or node is None:
        return ""
    names = set()
    for sub in ast.walk(node):
        targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target] if isinstance(sub, ast.AnnAssign) else []
        for target in targets:
            for part in ast.walk(target):
                if (
                    isinstance(part, ast.Attribute)
                    and isinstance(part.value, ast.Name)
                    and part.value.id == "self"
                    and not part.attr.startswith("_")
                ):
                    names.add(part.attr)
    return "{ attrs = [" + ", ".join(f'"{n}"' for n in sorted(names)) + "] }" if names else '"str"'


def _candidate(found: Found, oracles: HeadRows, taken: set[str]) -> Candidate:
    node = found.node
    assert node is not None  # only removed functions have none, and they get no candidate
    kind, reason = suggest_kind(node)
    name = row_entry(found).partition(":")[2].replace(".", "_").lower()
    ident = unique_id(f"{name}_{_proposal(kind).id_suffix}", taken)
    oracle_file, placement = oracle_file_for(found.module, oracles)
    return Candidate(
        row_entry(found),
        found.path,
        found.line,
        found.status,
        ast.unparse(node.args),
        kind,
        reason,
        ident,
        oracle_file,
        placement,
        receiver=_receiver(found),
        project=_project(found),
    )


def survey(repo: str, base: str, head: str, paths: Sequence[str], oracles: HeadRows = HeadRows()) -> Survey:
    """Every function and method of `paths` added, changed or removed between `base` and `head`,
    each with its candidate row or the reason it has none (`skip_reason`).

    Args:
        repo: the repository.
        base, head: commit ids (the merge base and HEAD).
        paths: repository-relative `.py` files of the production packages that differ.
        oracles: HEAD's oracle rows (`head_rows`): they decide which functions already have a
            row, which ids are taken and which oracle file a candidate goes in.

    Never raises (`functions.changed_in_file`).
    """
    taken = {r.id for r in oracles.rows}
    outcomes: list[Outcome] = []
    notes: list[str] = []
    for path in sorted(paths):
        found, note = changed_in_file(repo, base, head, path)
        if note:
            notes.append(note)
        for item in found:
            reason = skip_reason(item, oracles.rows)
            outcomes.append(Outcome(item, None if reason else _candidate(item, oracles, taken), reason))
    return Survey(tuple(outcomes), tuple(notes), tuple(sorted(paths)))


def explain(
    result: Survey, packages: Sequence[str], others: Sequence[str] = (), oracle_notes: Sequence[str] = ()
) -> list[str]:
    """What `propose` found, as TOML comment lines: one per function or method (its candidate's
    id, or why it has none), one per changed production file that yielded none, one per changed
    `.py` file outside the production packages (`others`, never read) and `oracle_notes`.

    Args:
        result: the survey.
        packages: the policy's production packages.
        others: changed `.py` files outside them.
        oracle_notes: `HeadRows.notes`.
    """
    listed = ", ".join(packages)
    lines = (
        [
            f"# {len(result.outcomes)} function(s) or method(s) added, changed or removed in the production diff; "
            f"{len(result.candidates)} with a candidate row:"
        ]
        if result.outcomes
        else []
    )
    for outcome in result.outcomes:
        f = outcome.found
        where = (
            f"removed from {f.path}, line {f.line} at the merge base"
            if f.status == "removed"
            else f"{f.status} at {f.path}:{f.line}"
        )
        what = f"candidate {outcome.candidate.id} below" if outcome.candidate else f"no candidate: {outcome.reason}"
        lines.append(f"#   {f.entry} ({where}): {what}")
    lines.extend(f"# {note}" for note in result.notes)
    if not result.paths:
        lines.append(f"# no .py file of the production packages of {POLICY_PATH} ({listed}) changed")
    lines.extend(f"# {path}: not in a production package of {POLICY_PATH} ({listed}); not read" for path in others)
    lines.extend(f"# note: {note}; a function with a row there may be proposed again" for note in oracle_notes)
    return lines


def render(candidate: Candidate) -> list[str]:
    """A candidate as TOML comment lines."""
    c = candidate
    name = c.entry.rsplit(":", 1)[1]
    return [
        f"# {c.entry} ({c.status} at {c.path}:{c.line})",
        f"# goes in {c.oracle_file}: {c.placement}",
        "# [[invariant]]",
        f'# id = "{c.id}"',
        f'# entry = "{c.entry}"',
        f'# kind = "{c.kind}"  # {c.reason}',
        *(
            [f'# receiver = "{c.receiver}"  # builds the object from each sample\'s "receiver": [args] or {{kw}}']
            if c.receiver
            else []
        ),
        *(
            [
                f"# project = {c.project}  # the object is not plain JSON: the row compares this (docs/oracles.md, "
                '"Projections")'
            ]
            if c.project
            else []
        ),
        *_proposal(c.kind).fields,
        f'# blob = "{c.blob}"  # samples for {name}({c.signature})',
        "# # needs `pin --write` once the blob exists (it adds blob_sha256)",
        f"# rationale: {name}({c.signature}) was {c.status} in {c.path}",
        "",
    ]


def model_rows(command: str, diff: str, allowed: Sequence[str]) -> tuple[list[str], list[str]]:
    """Runs `command` (split like a shell would, run without a shell) with INSTRUCTION and `diff`
    on stdin; returns (accepted rows as TOML comment lines, one reason per rejected row).

    Raises:
        GateError: (exit 1) when the command cannot run, fails, times out, or prints no TOML.
    """
    try:
        proc = subprocess.run(
            shlex.split(command),
            input=INSTRUCTION + "\n" + diff,
            capture_output=True,
            text=True,
            timeout=MODEL_TIMEOUT_S,
            check=False,
        )
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        raise GateError(f"--model-command could not run: {exc}") from None
    if proc.returncode != 0:
        raise GateError(f"--model-command exited {proc.returncode}: {visible(proc.stderr.strip()[-300:])}")
    try:
        rows = tomllib.loads(proc.stdout).get("invariant", [])
    except tomllib.TOMLDecodeError as exc:
        raise GateError(f"--model-command did not answer with TOML: {exc}") from None
    accepted: list[str] = []
    rejected: list[str] = []
    for index, row in enumerate(rows if isinstance(rows, list) else []):
        label = row.get("id", f"row {index + 1}") if isinstance(row, dict) else f"row {index + 1}"
        if not isinstance(row, dict):
            rejected.append(f"{label}: not a table")
            continue
        if "blob_sha256" in row:
            rejected.append(f"{label}: carries a blob_sha256; a proposal never invents a pin")
            continue
        if row.get("kind") not in KINDS:
            rejected.append(f"{label}: kind {row.get('kind')!r} is not one of {', '.join(KINDS)}")
            continue
        text = _row_toml({**row, "blob_sha256": "0" * 64})
        problems = parse_oracle(("schema = 1\n\n" + text).encode(), "proposal", allowed).problems
        if problems:
            rejected.append(f"{label}: {problems[0]}")
            continue
        accepted.extend(
            ["# [[invariant]]  # from --model-command; needs a blob and `pin --write`"]
            + [f"# {line}" for line in _row_toml(row).splitlines()[1:]]
            + [""]
        )
    return accepted, rejected


def _row_toml(row: dict[str, object]) -> str:
    """One `[[invariant]]` table from a parsed row (strings, numbers, lists and tables of those)."""
    lines = ["[[invariant]]"]
    for key, value in row.items():
        lines.append(f"{_key(key)} = {_value(value)}")
    return "\n".join(lines) + "\n"


def _key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() and key.isascii() else _value(key)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(str(k))} = {_value(v)}" for k, v in value.items()) + " }"
    raise GateError(f"--model-command answered a value TOML cannot hold here: {value!r}")
