"""Oracle file schema 1 (docs/design.md section 2): parsing and validation of `oracles/*.toml`.

Only the TOML bytes are judged here; blob bytes, symlinks and hash pins are checked by `loader.py` and `pin_check.py`.
"""

from __future__ import annotations

import datetime
import posixpath
import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from tools.oracle_gate.errors import OracleError
from tools.oracle_gate.spec import call_fields, kinds
from tools.oracle_gate.spec.call_fields import CALLABLE_PATTERN
from tools.oracle_gate.spec.encoding import invisible_hint, text_problem
from tools.oracle_gate.spec.generate import GenerateSpec, parse_generate
from tools.oracle_gate.spec.values import ARG_PATTERN, IDENT, INT64_MAX, INT64_MIN, is_number

SCHEMA_VERSION = 1
# The kinds' names, in the order messages list them (spec/kinds.py).
KINDS = kinds.NAMES
BLOB_DIR = "oracles/blobs/"
# Where only the clean run's pristine tree holds the verified hidden blobs (suite/hidden_store.py):
# no commit may hold a file there, and no row's `blob` may point there.
HIDDEN_DIR = BLOB_DIR + "_hidden"
# The invariant id rule, written once: results.py (the `[<id>]` testcase suffix) and manifest.py (the
# `# invariant <id> <file>` lines) build their patterns from ID_PATTERN.pattern.
ID_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,63}")
SHA256_PATTERN = re.compile(r"[0-9a-f]{64}")
_IDENT = IDENT
ENTRY_PATTERN = CALLABLE_PATTERN
MAX_REPEAT = 1000
DEFAULT_TIMEOUT_S = 60
MAX_TIMEOUT_S = 3600
# The caller's address-space limit (RLIMIT_AS) while it serves a row, in MiB (docs/design.md
# section 8, "Limits"); a row may raise it with `memory_mib`.
DEFAULT_MEMORY_MIB = 2048
MIN_MEMORY_MIB = 256
MAX_MEMORY_MIB = 65536

_COMMON = (
    "id",
    "entry",
    "kind",
    "blob",
    "blob_sha256",
    "seed",
    "timeout_s",
    "memory_mib",
    "receiver",
    "build",
    "project",
    "generate",
    "hidden_sha256",
    "raises_agree",
)
# The keys of some kinds only: a kind says which it requires and which it also allows (Kind.required,
# Kind.allowed).
_KIND_SPECIFIC = (
    "min",
    "max",
    "args",
    "repeat",
    "reference",
    "args_names",
    "pattern",
    "inverse",
    "over",
    "direction",
    "entries",
    "element",
)
_ALL_KEYS = frozenset(_COMMON + _KIND_SPECIFIC)
_REQUIRED = ("id", "entry", "kind", "blob", "blob_sha256")


@dataclass(frozen=True)
class Invariant:
    """One validated `[[invariant]]` row.

    Attributes:
        id: unique invariant id, a full match of ID_PATTERN (`[a-z][a-z0-9_]{0,63}`).
        entry: `package.module:function`, the production callable under test.
        kind: one of KINDS (spec/kinds.py: `kinds.kind(invariant.kind)` is its Kind).
        blob: repository-relative path of the JSON sample file under `oracles/blobs/`.
        blob_sha256: 64 lowercase hex digits, the sha256 of the blob's bytes.
        source: repository-relative path of the oracle file holding the row.
        seed: seed for every random source of the harness for this row, or None.
        min, max: inclusive bounds (`bound` only), int or float.
        args: sample fields passed as keyword arguments (`idempotent` only).
        repeat: number of calls, >= 2 (`idempotent` only).
        timeout_s: time limit in seconds for calling the entry on all of the row's samples,
            0 < timeout_s <= MAX_TIMEOUT_S (3600); DEFAULT_TIMEOUT_S (60 s) when the row has none.
        memory_mib: the caller's address-space limit in MiB while it serves the row, an integer
            from MIN_MEMORY_MIB (256) to MAX_MEMORY_MIB (65536); DEFAULT_MEMORY_MIB (2048) when
            the row has none.
        generate: the row's validated `generate` table, or None; `generate.draw` turns it into
            samples. Every kind allows one but `exact_table` without a `reference`.
        receiver: `package.module:callable` that builds the object a method entry
            (`package.module:Class.method`) is called on, from each sample's `receiver` value; or None.
        build: (argument name, `package.module:callable`) pairs: the argument is built from its
            JSON value before the call.
        args_names: the names of the positional arguments (`exact_table`, `antisymmetric`).
        project: how the result is turned into plain JSON: one of call_fields.PROJECTIONS,
            `{"attrs": [name, ...]}` or `{"call": name}`; None for none.
        pattern: the regular expression of a `matches` row.
        reference: `oracles.reference.module:function`, the reference implementation whose return
            value is the expected value of every sample that has none stored; or None.
        inverse: the `round_trip` inverse; over, direction: the `monotonic` argument and order.
        entries: the callables of a `composed` row, in call order (`entry` is the first).
        element: the identity element e of an `identity` row, a plain value; or None.
        hidden_sha256: the sha256 (64 lowercase hex digits) of the row's hidden blob, whose bytes
            only the hidden store holds (docs/oracles.md, "Hidden samples"); or None.
        raises_agree: True when the entry and the reference raising the same class (or the entry a
            subclass of it) counts as agreement, for a row whose reference judges every sample
            (docs/oracles.md, "Expected exceptions"); False (a raise fails) by default.
    """

    id: str
    entry: str
    kind: str
    blob: str
    blob_sha256: str
    source: str
    seed: int | None = None
    min: int | float | None = None
    max: int | float | None = None
    args: tuple[str, ...] = ()
    repeat: int | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_mib: int = DEFAULT_MEMORY_MIB
    generate: GenerateSpec | None = None
    receiver: str | None = None
    build: tuple[tuple[str, str], ...] = ()
    args_names: tuple[str, ...] = ()
    project: str | dict[str, object] | None = None
    pattern: str | None = None
    reference: str | None = None
    inverse: str | None = None
    over: str | None = None
    direction: str | None = None
    entries: tuple[str, ...] = ()
    hidden_sha256: str | None = None
    element: object = None
    raises_agree: bool = False


@dataclass(frozen=True)
class Retired:
    """One `[[retired]]` entry: an id retired on purpose (docs/oracles.md, "Retiring a row").

    Attributes:
        id: the retired invariant id (ID_PATTERN); no row of any oracle file may use it again.
        reason: why the row was retired, a non-empty line of text.
        since: the day it was retired (a TOML local date, `since = 2026-12-03`).
        source: repository-relative path of the oracle file holding the entry.
    """

    id: str
    reason: str
    since: datetime.date
    source: str


@dataclass
class OracleFile:
    """An oracle file after validation.

    Attributes:
        path: repository-relative path.
        invariants: the rows that passed validation, in file order.
        declared_ids: every readable id string in the file, valid row or not (for the missing-id check).
        problems: one OracleError per problem found; empty when the file is valid.
        retired: the file's valid `[[retired]]` entries, in file order.
        parsed: True when the file was readable TOML with an array of rows, so `declared_ids` is
            what the file declares (False: the ids are unknown, not absent).
    """

    path: str
    invariants: list[Invariant] = field(default_factory=list)
    declared_ids: list[str] = field(default_factory=list)
    problems: list[OracleError] = field(default_factory=list)
    retired: list[Retired] = field(default_factory=list)
    parsed: bool = False


# The one file the hidden phase writes into its pristine tree: the hidden inputs view of every row
# whose hidden blob the run was given, split from the blobs by the gate itself (hidden.py), so no
# expected value enters any root a Bazel server runs in (docs/design.md section 10).
HIDDEN_INPUTS = HIDDEN_DIR + "/inputs.json"


def hidden_path(digest: str) -> str:
    """The repository-relative path of the hidden blob `digest` (64 hex digits) in the clean run's
    pristine tree: `<HIDDEN_DIR>/<digest>.json` (suite/hidden_store.py)."""
    return f"{HIDDEN_DIR}/{digest}.json"


def check_blob_path(blob: str) -> str | None:
    """Returns why `blob` is not an acceptable blob path, or None when it is.

    A blob path is repository-relative, POSIX-normalized, inside `oracles/blobs/`, with no `..`, `.`,
    empty segment, backslash or control character.
    """
    if not blob:
        return "is empty"
    if any(ord(c) < 0x20 or c == "\x7f" for c in blob):
        return "contains a control character"
    if "\\" in blob:
        return "contains a backslash; use forward slashes"
    if blob.startswith("/"):
        return f"{blob!r} is absolute; give a path relative to the repository root under {BLOB_DIR}"
    parts = blob.split("/")
    if any(p in ("", ".", "..") for p in parts) or posixpath.normpath(blob) != blob:
        return f"{blob!r} is not a normalized path (no '..', '.', or empty segments)"
    if not blob.startswith(BLOB_DIR) or len(parts) < 3:
        return f"{blob!r} is outside {BLOB_DIR}"
    if blob.startswith(HIDDEN_DIR + "/"):
        return (
            f"{blob!r} is in {HIDDEN_DIR}/, which only the gate's hidden phase fills; "
            "name the hidden blob by hidden_sha256"
        )
    return None


def _row_label(row: object, index: int) -> str:
    if isinstance(row, dict):
        ident = row.get("id")
        if type(ident) is str and ID_PATTERN.fullmatch(ident):
            return ident
    return f"#{index + 1}"


# Records one problem of the row being validated: (field, message).
_Bad = Callable[[str, str], None]


def _validate_row(
    row: dict[str, object], label: str, path: str, allowed_packages: Sequence[str] | None
) -> tuple[Invariant | None, list[OracleError]]:
    """Validates one row: its Invariant and no problems, or None and one OracleError per problem."""
    errs: list[OracleError] = []

    def bad(fieldname: str, message: str) -> None:
        errs.append(OracleError(message, path=path, row=label, field=fieldname))

    _check_keys(row, bad)
    if errs:
        return None, errs
    kind = kinds.kind_of(row["kind"])
    _check_common(row, allowed_packages, bad)
    _check_kind_keys(row, kind, bad)
    _check_bounds(row, bad)
    _check_args(row, bad)
    _check_limits(row, bad)
    args_names = _check_call_fields(row, kind, allowed_packages, bad)
    spec: GenerateSpec | None = None
    if "generate" in row and kind is not None:
        args = row.get("args")
        valid_args = tuple(args) if type(args) is list and not any(e.field == "args" for e in errs) else None
        if kind.expected_stored and "reference" not in row:
            bad(
                "generate",
                f"is not allowed for kind {kind.name!r} without a reference: a generated sample "
                "has no stored expected value, so the reference must give it",
            )
        elif kind.sample == kinds.TABLE and "args_names" not in row:
            bad(
                "args_names",
                f"is required when an {kind.name} row generates samples: it names the generated "
                "fields that become the positional arguments, in order",
            )
        else:
            spec, generate_errs = parse_generate(
                row["generate"],
                kind.name,
                valid_args,
                path=path,
                row=label,
                positional=args_names,
                receiver="receiver" in row,
                over=row.get("over") if kind.sample_rule == kinds.OVER else None,
                entry=_first_entry(row),
            )
            errs.extend(generate_errs)
    if errs:
        return None, errs
    return _invariant(row, path, spec), []


def _check_keys(row: dict[str, object], bad: _Bad) -> None:
    """Reports unknown keys, missing required keys and required keys that are not strings. A
    `composed` row names its callables in `entries` and has no `entry`."""
    for key in sorted(set(row) - _ALL_KEYS):
        bad(key, f"unknown key {key!r}; allowed keys are {', '.join(sorted(_ALL_KEYS))}")
    kind = kinds.kind_of(row.get("kind"))
    entries = kind is not None and kind.entries
    if entries and "entry" in row:
        bad("entry", f"is not allowed for kind {row['kind']!r}: name the callables, in call order, in entries")
    for key in _REQUIRED:
        if key not in row and not (entries and key == "entry"):
            bad(key, "is required")
    for key in ("id", "entry", "kind", "blob", "blob_sha256"):
        if key in row and type(row[key]) is not str:
            bad(key, f"must be a string, got {type(row[key]).__name__}")


def _first_entry(row: dict[str, object]) -> str:
    """The callable a row names first: `entry`, or a `composed` row's first of `entries`; "" when neither
    is a string."""
    entries = row.get("entries")
    first = row.get("entry", entries[0] if type(entries) is list and entries else "")
    return first if type(first) is str else ""


def _check_common(row: dict[str, object], allowed_packages: Sequence[str] | None, bad: _Bad) -> None:
    """Checks the fields of every kind (id, entry, kind, blob, blob_sha256, seed); the first five are strings."""
    ident = str(row["id"])
    kind = str(row["kind"])
    if not ID_PATTERN.fullmatch(ident):
        bad("id", f"{ident!r} does not match ^{ID_PATTERN.pattern}$")
    if "entry" in row:
        call_fields.check_callable(row["entry"], "entry", allowed_packages, bad)
    if kind not in KINDS:
        bad("kind", f"unknown kind {kind!r}; kinds are {', '.join(KINDS)} (a new kind is a schema change)")
    why = check_blob_path(str(row["blob"]))
    if why:
        bad("blob", why)
    if not SHA256_PATTERN.fullmatch(str(row["blob_sha256"])):
        bad("blob_sha256", "must be 64 lowercase hex digits (the sha256 of the blob's bytes)")
    if "hidden_sha256" in row:
        _check_hidden(row, kinds.kind_of(kind), bad)
    if "raises_agree" in row:
        _check_raises_agree(row, kinds.kind_of(kind), bad)
    seed = row.get("seed")
    if "seed" in row and type(seed) is not int:
        bad("seed", f"must be an integer, got {type(seed).__name__}")
    elif type(seed) is int and not INT64_MIN <= seed <= INT64_MAX:
        bad("seed", "must fit in a signed 64-bit integer")


def _check_hidden(row: dict[str, object], kind: kinds.Kind | None, bad: _Bad) -> None:
    """`hidden_sha256` is 64 lowercase hex digits and names a blob other than the row's own; hidden
    samples are judged as stored ones are, so a row whose stored samples its reference judges
    (`Kind.reference_judges_stored`: `agrees`, a `composed` row with a reference) cannot have them."""
    hidden = row["hidden_sha256"]
    if type(hidden) is not str or not SHA256_PATTERN.fullmatch(hidden):
        bad("hidden_sha256", "must be 64 lowercase hex digits (the sha256 of the hidden blob's bytes)")
    elif hidden == row.get("blob_sha256"):
        bad("hidden_sha256", "is the visible blob's own digest: a hidden blob holds samples the repository does not")
    if kind is not None and kind.reference_judges_stored and ("reference" in row or "reference" in kind.required):
        bad(
            "hidden_sha256",
            f"is not allowed for kind {kind.name!r} judged by its reference: hidden samples are "
            "judged by their stored expected values, bounds or relation, never by a reference",
        )


def _check_raises_agree(row: dict[str, object], kind: kinds.Kind | None, bad: _Bad) -> None:
    """`raises_agree` is a boolean, for a row whose reference judges every sample
    (`Kind.reference_judges_stored` with a `reference`: `agrees`, a `composed` row with a reference)."""
    if type(row["raises_agree"]) is not bool:
        bad("raises_agree", f"must be true or false, got {type(row['raises_agree']).__name__}")
    elif kind is not None and not (kind.reference_judges_stored and "reference" in row):
        bad(
            "raises_agree",
            f"is not allowed for kind {kind.name!r} without a reference that judges every sample "
            "(agrees, composed with a reference)",
        )


def _check_kind_keys(row: dict[str, object], kind: kinds.Kind | None, bad: _Bad) -> None:
    """Reports the kind-specific keys (`_KIND_SPECIFIC`, and `generate` where a kind requires it)
    a known kind forbids or requires."""
    if kind is None:
        return
    for key in _KIND_SPECIFIC + ("generate",):
        if key in row and key not in kind.required + kind.allowed and key != "generate":
            bad(key, f"is not allowed for kind {kind.name!r}")
        elif key not in row and key in kind.required:
            bad(key, f"is required for kind {kind.name!r}")


def _check_call_fields(
    row: dict[str, object], kind: kinds.Kind | None, allowed_packages: Sequence[str] | None, bad: _Bad
) -> tuple[str, ...] | None:
    """Checks receiver, build, args_names, project and the kinds' own fields (`call_fields`, and
    `Kind.check` of a kind that has one); returns the valid `args_names`, or None."""
    args_names = call_fields.check_args_names(row, kind, bad)
    call_fields.check_receiver(row, kind, allowed_packages, bad)
    call_fields.check_build(row, kind, args_names, allowed_packages, bad)
    call_fields.check_project(row, kind, bad)
    call_fields.check_pattern(row, bad)
    call_fields.check_reference(row, bad)
    call_fields.check_relation(row, allowed_packages, bad)
    if kind is not None and kind.check is not None:
        kind.check(row, bad)
    return args_names


def _check_bounds(row: dict[str, object], bad: _Bad) -> None:
    """Checks that `min` and `max`, where given, are finite numbers with min <= max."""
    lo, hi = row.get("min"), row.get("max")
    for key, value in (("min", lo), ("max", hi)):
        if key in row and not is_number(value):
            what = "a bool" if type(value) is bool else type(value).__name__
            if type(value) in (int, float):
                what = repr(value)
            bad(key, f"must be a finite int or float, got {what}")
    if is_number(lo) and is_number(hi) and lo > hi:  # type: ignore[operator]
        bad("max", f"min ({lo}) is greater than max ({hi})")


def _check_args(row: dict[str, object], bad: _Bad) -> None:
    """Checks that `args`, where given, is an array of distinct usable keyword argument names."""
    args = row.get("args")
    if "args" in row:
        if type(args) is not list or not all(type(a) is str for a in args):
            bad("args", "must be an array of strings")
        else:
            for a in args:
                if not ARG_PATTERN.fullmatch(a) or a == "state":
                    bad("args", f"{a!r} is not a usable keyword argument name")
            if len(set(args)) != len(args):
                bad("args", "names a field twice")


def _check_limits(row: dict[str, object], bad: _Bad) -> None:
    """Checks `repeat`, `timeout_s` and `memory_mib`, where given, against their ranges."""
    repeat = row.get("repeat")
    if "repeat" in row and (type(repeat) is not int or not 2 <= repeat <= MAX_REPEAT):
        got = repr(repeat) if type(repeat) is int else type(repeat).__name__
        bad("repeat", f"must be an integer from 2 to {MAX_REPEAT}, got {got}")
    timeout = row.get("timeout_s")
    if "timeout_s" in row and not (is_number(timeout) and 0 < timeout <= MAX_TIMEOUT_S):  # type: ignore[operator]
        what = "a bool" if type(timeout) is bool else type(timeout).__name__
        if type(timeout) in (int, float):
            what = repr(timeout)
        bad("timeout_s", f"must be a number of seconds with 0 < timeout_s <= {MAX_TIMEOUT_S}, got {what}")
    memory = row.get("memory_mib")
    if "memory_mib" in row and (type(memory) is not int or not MIN_MEMORY_MIB <= memory <= MAX_MEMORY_MIB):
        got = repr(memory) if type(memory) is int else ("a bool" if type(memory) is bool else type(memory).__name__)
        bad("memory_mib", f"must be an integer number of MiB from {MIN_MEMORY_MIB} to {MAX_MEMORY_MIB}, got {got}")


def _invariant(row: dict[str, object], path: str, spec: GenerateSpec | None) -> Invariant:
    """The Invariant of a row that passed validation, with the defaults for fields it leaves out."""
    seed, lo, hi = row.get("seed"), row.get("min"), row.get("max")
    args, repeat = row.get("args"), row.get("repeat")
    timeout, memory = row.get("timeout_s"), row.get("memory_mib")
    entries = tuple(row["entries"]) if type(row.get("entries")) is list else ()  # type: ignore[arg-type]
    build = row.get("build")
    text = {
        key: str(row[key]) if key in row else None
        for key in ("receiver", "pattern", "reference", "inverse", "over", "direction")
    }
    return Invariant(
        id=str(row["id"]),
        entry=str(row["entry"]) if "entry" in row else entries[0],
        kind=str(row["kind"]),
        blob=str(row["blob"]),
        blob_sha256=str(row["blob_sha256"]),
        source=path,
        seed=seed if type(seed) is int else None,
        min=lo if is_number(lo) else None,  # type: ignore[arg-type]
        max=hi if is_number(hi) else None,  # type: ignore[arg-type]
        args=tuple(args) if type(args) is list else (),
        repeat=repeat if type(repeat) is int else None,
        timeout_s=float(timeout) if is_number(timeout) else DEFAULT_TIMEOUT_S,  # type: ignore[arg-type]
        memory_mib=memory if type(memory) is int else DEFAULT_MEMORY_MIB,
        generate=spec,
        build=tuple(sorted(build.items())) if type(build) is dict else (),
        args_names=tuple(row["args_names"]) if type(row.get("args_names")) is list else (),  # type: ignore[arg-type]
        project=row.get("project"),  # type: ignore[arg-type]
        entries=entries,
        hidden_sha256=str(row["hidden_sha256"]) if "hidden_sha256" in row else None,
        element=row.get("element"),
        raises_agree=row.get("raises_agree") is True,
        **text,
    )


def parse_oracle(data: bytes, path: str, allowed_packages: Sequence[str] | None = None) -> OracleFile:
    """Parses and validates one oracle file.

    Args:
        data: the file's bytes (UTF-8 TOML).
        path: repository-relative path, used in messages.
        allowed_packages: top-level production packages an `entry` may name (from policy.toml), or
            None to skip that check.

    Returns:
        An OracleFile; its `problems` list holds one OracleError (exit 5) per problem. Bytes that
        are not clean UTF-8 text (a byte order mark, UTF-16, Latin-1, NUL or another control
        character; see `encoding.text_problem`) give that one problem, named in words, and nothing
        else is checked. Never raises for bad content.
    """
    result = OracleFile(path=path)
    unreadable = text_problem(data, "TOML")
    if unreadable is not None:
        result.problems.append(OracleError(unreadable, path=path))
        return result
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, ValueError, RecursionError) as exc:
        hint = invisible_hint(data.decode("utf-8"))
        result.problems.append(OracleError(f"is not valid TOML: {exc}" + (f"; {hint}" if hint else ""), path=path))
        return result
    for key in sorted(set(doc) - {"schema", "invariant", "retired"}):
        result.problems.append(
            OracleError(f"unknown top-level key {key!r}; allowed: schema, invariant, retired", path=path, field=key)
        )
    _add_retired(result, doc.get("retired", []))
    if "schema" not in doc:
        result.problems.append(OracleError(f"is required (schema = {SCHEMA_VERSION})", path=path, field="schema"))
    elif type(doc["schema"]) is not int or doc["schema"] != SCHEMA_VERSION:
        result.problems.append(
            OracleError(f"must be the integer {SCHEMA_VERSION}, got {doc['schema']!r}", path=path, field="schema")
        )
    rows = doc.get("invariant")
    if type(rows) is not list and rows is not None:
        result.problems.append(OracleError("must be an array of tables ([[invariant]])", path=path, field="invariant"))
        return result
    if not rows:
        result.problems.append(
            OracleError(
                "no [[invariant]] rows"
                + (
                    "; an oracle file holds at least one: keep the [[retired]] entries of a "
                    "file's last row in another oracle file"
                    if result.retired
                    else ""
                ),
                path=path,
                field="invariant",
            )
        )
        return result
    result.parsed = True
    _add_rows(result, rows, allowed_packages)
    return result


def _add_rows(result: OracleFile, rows: list[object], allowed_packages: Sequence[str] | None) -> None:
    """Validates each row into `result`: its declared id, its problems, its Invariant when valid."""
    path = result.path
    seen: set[str] = set()
    for index, row in enumerate(rows):
        label = _row_label(row, index)
        if type(row) is not dict:
            result.problems.append(OracleError("must be a table", path=path, row=label, field="invariant"))
            continue
        ident = row.get("id")
        if type(ident) is str and ident:
            result.declared_ids.append(ident)
            if ident in seen:
                result.problems.append(
                    OracleError(f"duplicate id {ident!r} in this file", path=path, row=label, field="id")
                )
                continue
            seen.add(ident)
        invariant, errs = _validate_row(row, label, path, allowed_packages)
        result.problems.extend(errs)
        if invariant is not None:
            result.invariants.append(invariant)


_RETIRED_KEYS = ("id", "reason", "since")


def _add_retired(result: OracleFile, entries: object) -> None:
    """Validates the `[[retired]]` entries into `result.retired`, one OracleError (exit 5) per
    problem: an array of tables, each with exactly `id` (ID_PATTERN), `reason` (a non-empty
    string) and `since` (a TOML local date)."""
    path = result.path
    if type(entries) is not list:
        result.problems.append(OracleError("must be an array of tables ([[retired]])", path=path, field="retired"))
        return
    for index, entry in enumerate(entries):
        label = _row_label(entry, index)
        if type(entry) is not dict:
            result.problems.append(OracleError("must be a table", path=path, row=label, field="retired"))
            continue
        found = []
        for key in sorted(set(entry) - set(_RETIRED_KEYS)):
            found.append((key, f"unknown key {key!r} in a [[retired]] entry; allowed keys are id, reason, since"))
        for key in _RETIRED_KEYS:
            if key not in entry:
                found.append((key, "is required in a [[retired]] entry"))
        ident, reason, since = entry.get("id"), entry.get("reason"), entry.get("since")
        if "id" in entry and not (type(ident) is str and ID_PATTERN.fullmatch(ident)):
            found.append(("id", f"{ident!r} does not match ^{ID_PATTERN.pattern}$"))
        if "reason" in entry and not (type(reason) is str and reason.strip() and "\n" not in reason):
            found.append(("reason", "must be a non-empty one-line string saying why the row was retired"))
        if "since" in entry and type(since) is not datetime.date:
            found.append(("since", f"must be a TOML local date such as since = 2026-12-03 (no quotes), got {since!r}"))
        result.problems.extend(OracleError(message, path=path, row=label, field=key) for key, message in found)
        if not found:
            result.retired.append(Retired(str(ident), str(reason), since, path))  # type: ignore[arg-type]


def retired_problems(files: Sequence[OracleFile]) -> list[OracleError]:
    """One OracleError (exit 5) for each retired id retired twice, and for each row whose id some
    `[[retired]]` entry of any file retires: a retired id can never be reused."""
    first: dict[str, Retired] = {}
    errs: list[OracleError] = []
    for oracle in files:
        for entry in oracle.retired:
            if entry.id in first:
                errs.append(
                    OracleError(
                        f"{entry.id!r} is retired twice, already in {first[entry.id].source}",
                        path=oracle.path,
                        row=entry.id,
                        field="retired",
                    )
                )
            first.setdefault(entry.id, entry)
    for oracle in files:
        for ident in dict.fromkeys(oracle.declared_ids):
            if ident in first:
                was = first[ident]
                errs.append(
                    OracleError(
                        f"reuses the id {ident!r}, retired in {was.source} since {was.since.isoformat()} "
                        f"({was.reason}); a retired id can never be reused: give the row a new id",
                        path=oracle.path,
                        row=ident,
                        field="id",
                    )
                )
    return errs


def duplicate_ids(files: Iterable[OracleFile]) -> list[OracleError]:
    """Returns one OracleError for each id declared in more than one oracle file."""
    first: dict[str, str] = {}
    errs: list[OracleError] = []
    for oracle in files:
        for ident in dict.fromkeys(oracle.declared_ids):
            if ident in first and first[ident] != oracle.path:
                errs.append(
                    OracleError(
                        f"duplicate id {ident!r}, already declared in {first[ident]}",
                        path=oracle.path,
                        row=ident,
                        field="id",
                    )
                )
            else:
                first.setdefault(ident, oracle.path)
    return errs


def is_oracle_path(path: str) -> bool:
    """True for an oracle file: a `.toml` directly under `oracles/`, other than `policy.toml`."""
    return (
        path.startswith("oracles/")
        and path.count("/") == 1
        and path.endswith(".toml")
        and path != "oracles/policy.toml"
    )
