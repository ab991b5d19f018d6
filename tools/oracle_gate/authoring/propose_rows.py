"""Whole candidate rows, ready to take as they are: what `propose --all` suggests for every public
function of the production packages, and the behaviour-kept row for each function a change
modified (docs/oracles.md, "Proposing rows").

A candidate is a row with a generator table drawn from the function's annotations
(spec/annotations.py) and a few samples drawn from it for its blob: a round trip of two functions
that undo each other, an idempotent canonical form, a binary operation's commutativity,
associativity and identity element (authoring/pairs.py holds the name and signature rules), and the
behaviour kept since the base tip. Each row is checked with the oracle schema (a placeholder pin)
before it is offered; one it refuses is a note, never a candidate.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from tools.oracle_gate.authoring import pairs
from tools.oracle_gate.authoring.propose import HeadRows, blob_path, oracle_file_for, unique_id
from tools.oracle_gate.git.functions import Found, FunctionNode, module_name
from tools.oracle_gate.git.tree import Tree
from tools.oracle_gate.spec import kinds
from tools.oracle_gate.spec.annotations import BYTES, DICT, FROZENSET, SET, TUPLE, Drawn, drawn, projection
from tools.oracle_gate.spec.generate import draw
from tools.oracle_gate.spec.schema import ENTRY_PATTERN, parse_oracle
from tools.oracle_gate.spec.toml_text import row_table
from tools.oracle_gate.text import visible

# Generated samples of a proposed row on every check: enough for a relation to meet the small
# values, empty collections and duplicates the annotation bounds draw often, cheap for any function.
PROPOSED_COUNT = 100
# A behaviour-kept row compares answers, never a relation, so a difference that needs several
# arguments to line up (a length that meets a word's end, a flag with a matching input) must be
# met by chance: it draws more, still a fraction of a second of the approved code's time.
KEPT_COUNT = 500
# Samples drawn into a proposed row's blob (a blob holds at least one): what `record` and a
# reviewer start from; the generated ones are drawn afresh on every check.
BLOB_SAMPLES = 3
# The salt the blob's samples are drawn with, so that a second run draws the same ones.
SALT = "propose"
# The end of a behaviour-kept row's id (`<function>_kept`).
KEPT_SUFFIX = "kept"
# The end of the id of a behaviour-kept row that leaves the parameters with defaults out.
DEFAULTS_SUFFIX = "kept_defaults"
# The pin a row is checked with before it has a blob (never written).
_PLACEHOLDER_PIN = "0" * 64


@dataclass(frozen=True)
class Proposed:
    """A whole candidate row.

    Attributes:
        row: the `[[invariant]]` table without `blob_sha256`, keys in writing order, `generate`
            last (a table).
        samples: the blob's samples, drawn from `generate` with SALT.
        oracle_file: the oracle file it goes in (`oracles/NAME.toml`).
        why: one line: the rule that suggested it.
    """

    row: dict[str, Any]
    samples: tuple[Any, ...]
    oracle_file: str
    why: str

    @property
    def id(self) -> str:
        """The row's id."""
        return str(self.row["id"])

    @property
    def blob(self) -> str:
        """The row's blob path."""
        return str(self.row["blob"])


@dataclass(frozen=True)
class Listed:
    """One public function or method `propose --all` read: its candidates' ids, or why none."""

    entry: str
    path: str
    line: int
    note: str


def checked(row: dict[str, Any], oracle_file: str, packages: Sequence[str], why: str) -> Proposed | str:
    """The candidate of `row` with its blob samples, or the schema's first problem with it."""
    text = row_table({**row, "blob_sha256": _PLACEHOLDER_PIN})
    parsed = parse_oracle(("schema = 1\n\n" + text).encode(), oracle_file, packages)
    if parsed.problems:
        return f"{row['id']}: {parsed.problems[0]}"
    samples = draw(parsed.invariants[0], SALT, BLOB_SAMPLES)
    return Proposed(row, tuple(samples), oracle_file, why) if samples else f"{row['id']}: no sample drawn"


def _projection(builder: str, module: ast.Module) -> object:
    """The `project` that turns a value built by `builder` back into the JSON it was built from
    (so a relation compares like with like), None for none needed, or False when none does (a set's
    order is not its JSON's)."""
    if builder in (TUPLE, BYTES):
        return "list"
    if builder in (SET, FROZENSET):
        return False
    if builder == DICT:
        return None
    name = builder.rpartition(":")[2]
    found = next((s for s in module.body if isinstance(s, ast.ClassDef) and s.name == name), None)
    bases = {ast.unparse(b).rpartition(".")[2] for b in found.bases} if found is not None else set()
    if "NamedTuple" in bases:
        return "list"
    if found is None or bases & {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"}:
        return False
    fields = [s.target.id for s in found.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
    return {"attrs": fields} if fields else False


class ModuleReader:
    """Proposes rows for the public functions of one module; `notes` collects why a rule that
    matched gave no row.

    Args:
        path: the file, repository-relative.
        tree: its syntax tree.
        oracles: the rows there are (their ids are taken; an entry with a row of a kind gets no
            other row of that kind).
        taken: the ids taken so far; each candidate's id is added.
        packages: the policy's production packages.
    """

    def __init__(
        self, path: str, tree: ast.Module, oracles: HeadRows, taken: set[str], packages: Sequence[str]
    ) -> None:
        self.path, self.module, self.tree = path, module_name(path, entry=True), tree
        self.oracles, self.taken, self.packages = oracles, taken, packages
        self.oracle_file = oracle_file_for(self.module, oracles)[0]
        self.notes: list[str] = []

    def public(self) -> Iterator[tuple[str, FunctionNode]]:
        """(qualified name, def) of each public module-level function and public method of a
        module-level class, in source order, whose entry the schema accepts."""
        for statement in self.tree.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found = [(statement.name, statement)]
            elif isinstance(statement, ast.ClassDef):
                found = [
                    (f"{statement.name}.{inner.name}", inner)
                    for inner in statement.body
                    if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef))
                ]
            else:
                continue
            for name, node in found:
                if not any(part.startswith("_") for part in name.split(".")) and self.entry_ok(name):
                    yield name, node

    def entry_ok(self, name: str) -> bool:
        """True when `module:name` is an entry the schema accepts."""
        return bool(ENTRY_PATTERN.fullmatch(f"{self.module}:{name}"))

    def offer(
        self,
        name: str,
        kind: kinds.Kind | str,
        fields: dict[str, Any],
        generate: dict[str, Any],
        why: str,
        suffix: str = "",
    ) -> Proposed | None:
        """The candidate row of `kind` for the function `name`, checked by the schema; None (and a
        note) when the schema refuses it, or when a row of that kind already names the entry. None
        values of `fields` are left out."""
        kind_name = kind if isinstance(kind, str) else kind.name
        entry = f"{self.module}:{name}"
        if any(r.entry == entry and r.kind == kind_name for r in self.oracles.rows):
            return None
        suffix = suffix or (
            KEPT_SUFFIX if isinstance(kind, str) else kind.proposal.id_suffix if kind.proposal else kind_name
        )
        wanted = f"{name.replace('.', '_').lower()}_{suffix}"
        ident = unique_id(wanted, self.taken)
        row: dict[str, Any] = {"id": ident, "entry": entry, "kind": kind_name}
        row.update({k: v for k, v in fields.items() if v is not None})
        row["blob"] = blob_path(self.oracle_file, ident)
        row["generate"] = {"count": KEPT_COUNT if kind_name == kinds.BACK_TO_BACK else PROPOSED_COUNT, **generate}
        result = checked(row, self.oracle_file, self.packages, why)
        if isinstance(result, str):
            self.taken.discard(ident)
            self.notes.append(f"{entry}: not proposed: {result}")
            return None
        return result


def _static(node: FunctionNode) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)


def kept_row(reader: ModuleReader, name: str, node: FunctionNode, found: Drawn) -> list[Proposed]:
    """A behaviour-kept row (`kinds.BACK_TO_BACK`) for a function whose arguments can be drawn: from
    then on, each change must keep every result of the base tip's version (docs/oracles.md,
    "Behaviour kept"); `record --write` fills its blob with inputs. None for a function annotated
    `-> None`, whose results are all None. A function with parameters that
    have defaults and some that have none gets a second one, `<name>_kept_defaults`, that draws only
    those without: the first never calls it with its defaults."""
    returns_none = isinstance(node.returns, ast.Constant) and node.returns.value is None
    if not found.generate or returns_none:
        return []  # `-> None`: every result would be None, a claim about nothing
    why = f"{reader.module}:{name} must keep returning what the base tip's version returns"
    shape = projection(node, reader.tree)
    out = [
        reader.offer(name, kinds.BACK_TO_BACK, {"build": found.build or None, "project": shape}, found.generate, why)
    ]
    required = {k: v for k, v in found.generate.items() if k not in found.defaulted}
    if found.defaulted and required:
        # Drawn defaults are never the defaults: a second row calls it with its required arguments
        # alone, so that a changed default is a changed result.
        build = {k: v for k, v in found.build.items() if k in required} or None
        why_defaults = why + ", called with its defaults"
        fields = {"build": build, "project": shape}
        out.append(reader.offer(name, kinds.BACK_TO_BACK, fields, required, why_defaults, DEFAULTS_SUFFIX))
    return [row for row in out if row is not None]


def idempotent_row(reader: ModuleReader, name: str, node: FunctionNode, found: Drawn) -> list[Proposed]:
    """An `idempotent` row for a function named like a canonical form (`pairs.is_idempotent_name`):
    its first argument is the state, the others its `args`, all drawn as plain JSON."""
    if not pairs.is_idempotent_name(node):
        return []
    names = [p.arg for p in pairs.required(node)]
    if any(n not in found.generate or n in found.build or n in ("state", "count") for n in names):
        reader.notes.append(f"{reader.module}:{name}: not proposed idempotent: its arguments must be plain JSON")
        return []
    state, *rest = names
    generate = {"state": found.generate[state], **{n: found.generate[n] for n in rest}}
    words = ", ".join(pairs.words(node.name))
    why = f"its name says it returns a canonical form ({words}): a second call changes nothing"
    offered = reader.offer(name, kinds.calling(kinds.STATES), {"args": rest, "repeat": 2}, generate, why)
    return [offered] if offered else []


def binary_rows(reader: ModuleReader, name: str, node: FunctionNode, found: Drawn) -> list[Proposed]:
    """`commutative`, `associative` and `identity` rows for a binary operation on one type, as its
    name and annotations suggest (`pairs.relations`)."""
    operands = pairs.binary_operands(node)
    if operands is None or operands[0].arg not in found.generate:
        return []
    a, b = operands[0].arg, operands[1].arg
    spec, builder = found.generate[a], found.build.get(a, "")
    project = _projection(builder, reader.tree) if builder else None
    if project is False:
        reader.notes.append(
            f"{reader.module}:{name}: not proposed as a binary operation: its results cannot be compared"
        )
        return []
    commutative, associative, element = pairs.relations(node)
    offered = []
    c = next(n for n in ("c", "third", "operand_c") if n not in (a, b))
    call = {"project": project}
    if commutative:
        build = {a: builder, b: builder} if builder else None
        fields = {"args_names": [a, b], "build": build, **call}
        why = f"{name}({a}, {b}) takes two values of one type and its name does not say the order matters"
        offered.append(reader.offer(name, kinds.calling(kinds.SWAPPED), fields, {a: spec, b: spec}, why))
    if associative:
        build = {a: builder, b: builder, c: builder} if builder else None
        fields = {"args_names": [a, b, c], "build": build, **call}
        why = f"{name} returns the type of its two arguments, so it can be grouped both ways"
        offered.append(reader.offer(name, kinds.calling(kinds.GROUPED), fields, {a: spec, b: spec, c: spec}, why))
    if element is not None and not builder:
        why = f"its name ({', '.join(pairs.words(node.name))}) and argument type have the identity element {element!r}"
        offered.append(reader.offer(name, kinds.calling(kinds.WITH_ELEMENT), {"element": element}, {a: spec}, why))
    return [p for p in offered if p is not None]


def round_trip_rows(reader: ModuleReader, public: dict[str, FunctionNode]) -> list[Proposed]:
    """A `round_trip` row for each pair of module-level functions that undo each other by name and
    signature (`pairs.round_trips`): the encoder is the entry, drawn on its one argument x, and the
    decoder the `inverse`."""
    offered = []
    module_level = {name: node for name, node in public.items() if "." not in name}
    for pair in pairs.round_trips(module_level):
        encoder = module_level[pair.entry]
        found = drawn(encoder, reader.tree, reader.module)
        x = pairs.required(encoder)[0].arg
        if isinstance(found, str) or x not in found.generate:
            reader.notes.append(f"{reader.module}:{pair.entry}: not proposed round_trip: {found or 'x not drawn'}")
            continue
        builder = found.build.get(x, "")
        project = _projection(builder, reader.tree) if builder else None
        if builder and project != "list":
            reader.notes.append(
                f"{reader.module}:{pair.entry}: not proposed round_trip: x is built, "
                "and its JSON is not what comes back"
            )
            continue
        fields = {"inverse": f"{reader.module}:{pair.inverse}", "build": {x: builder} if builder else None}
        why = f"{pair.inverse} undoes {pair.entry} by their names and signatures: {pair.inverse}({pair.entry}(x)) == x"
        proposed = reader.offer(
            pair.entry, kinds.calling(kinds.INVERTED), {**fields, "project": project}, {x: found.generate[x]}, why
        )
        offered += [proposed] if proposed else []
    return offered


def module_rows(reader: ModuleReader) -> tuple[list[Proposed], list[Listed]]:
    """Every candidate of `propose --all` for one module, and one line per public function: the
    ids of its candidates, or why it has none."""
    public = dict(reader.public())
    trips = round_trip_rows(reader, public)
    proposed: list[Proposed] = []
    listed: list[Listed] = []
    for name, node in public.items():
        found = drawn(node, reader.tree, reader.module)
        mine = [p for p in trips if p.row["entry"] == f"{reader.module}:{name}"]
        if isinstance(found, str):
            note = found
        elif "." in name and not _static(node):
            note = "a method: relations are proposed for functions and static methods"
        else:
            mine += idempotent_row(reader, name, node, found) + binary_rows(reader, name, node, found)
            mine += kept_row(reader, name, node, found)
            note = "no round trip, canonical form or binary operation found by name and signature"
        proposed += mine
        entry = f"{reader.module}:{name}"
        inverse_of = [p.id for p in trips if p.row.get("inverse") == entry]
        named = [r.id for r in reader.oracles.rows if r.entry == entry]
        if inverse_of and not mine:
            note = f"the inverse of {', '.join(inverse_of)}"
        elif named and not mine:
            note = f"no new candidate; rows naming it: {', '.join(named)}"
        text = f"candidate {', '.join(p.id for p in mine)}" if mine else f"no candidate: {note}"
        listed.append(Listed(f"{reader.module}:{name}", reader.path, node.lineno, text))
    return proposed, listed


@dataclass(frozen=True)
class AllSurvey:
    """What `propose --all` found.

    Attributes:
        proposed: the candidates, in file then line order.
        listed: one line per public function or method.
        notes: one line per file that does not parse and per rule that matched without a row.
    """

    proposed: tuple[Proposed, ...]
    listed: tuple[Listed, ...]
    notes: tuple[str, ...]


def survey_all(tree: Tree, packages: Sequence[str], oracles: HeadRows, allowed: Sequence[str]) -> AllSurvey:
    """Candidates for every public function and method of `packages` (each a production package),
    read from `tree`.

    Args:
        tree: the tree the sources are read from (HEAD's).
        packages: the packages to read.
        oracles: the rows there are (`propose.head_rows`).
        allowed: the policy's production packages (for the schema check of each row).

    Raises:
        GateError: (exit 1) when the tree cannot be read.
    """
    taken = {r.id for r in oracles.rows}
    proposed: list[Proposed] = []
    listed: list[Listed] = []
    notes: list[str] = []
    for package in packages:
        for path, entry in sorted(tree.files(package).items()):
            if not path.endswith(".py") or not entry.is_regular:
                continue
            try:
                parsed = ast.parse(tree.read(entry).decode("utf-8"))
            except (SyntaxError, ValueError, UnicodeDecodeError) as exc:
                notes.append(f"{path}: does not parse ({visible(str(exc))}); no function read")
                continue
            reader = ModuleReader(path, parsed, oracles, taken, allowed)
            found, lines = module_rows(reader)
            proposed += found
            listed += lines
            notes += reader.notes
    return AllSurvey(tuple(proposed), tuple(listed), tuple(notes))


def kept_rows(
    tree: Tree, changed: Sequence[Found], oracles: HeadRows, allowed: Sequence[str]
) -> tuple[list[Proposed], list[str]]:
    """A behaviour-kept row (`kinds.BACK_TO_BACK`) for each function a change modified (status
    "changed": an added one has no base version) whose arguments can be drawn from its annotations.

    Args:
        tree: HEAD's tree (the functions' modules are read from it).
        changed: the functions the diff found (`functions.changed_in_file`), already filtered to
            public module-level functions and methods.
        oracles: the rows there are; allowed: the policy's production packages.

    Returns:
        (candidates, one note per function that gets none and why).
    """
    changed = [item for item in changed if item.status == "changed" and item.node is not None]
    taken = {r.id for r in oracles.rows}
    proposed: list[Proposed] = []
    notes: list[str] = []
    for item in changed:
        entry = tree.files(posixpath.dirname(item.path)).get(item.path)
        if entry is None or item.node is None:
            continue
        reader = ModuleReader(item.path, ast.parse(tree.read(entry).decode("utf-8")), oracles, taken, allowed)
        found = drawn(item.node, reader.tree, reader.module)
        if isinstance(found, str) or not found.generate:
            notes.append(f"{item.entry}: no behaviour-kept row: {found or 'it takes no argument to draw'}")
            continue
        why = f"{item.entry} was changed: the change's version must return what the base tip's returns"
        fields = {"build": found.build or None, "project": projection(item.node, reader.tree)}
        offered = reader.offer(item.name, kinds.BACK_TO_BACK, fields, found.generate, why)
        proposed += [offered] if offered else []
        notes += reader.notes
    return proposed, notes
