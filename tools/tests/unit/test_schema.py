"""Schema 1 loader: every error path, with its exact message and exit code (5)."""

from __future__ import annotations

import pytest

from tools.oracle_gate.errors import INVALID_ORACLE
from tools.oracle_gate.spec.generate import MAX_DEPTH, ChoiceGen, GenerateSpec, IntGen
from tools.oracle_gate.spec.schema import DEFAULT_TIMEOUT_S, duplicate_ids, parse_oracle

PATH = "oracles/x.toml"
GOOD_PIN = "a" * 64


def row(**overrides: str) -> str:
    fields = {
        "id": '"ok_row"',
        "entry": '"shop.calc:add"',
        "kind": '"exact_table"',
        "blob": '"oracles/blobs/t.json"',
        "blob_sha256": f'"{GOOD_PIN}"',
    }
    fields.update(overrides)
    return "[[invariant]]\n" + "".join(f"{k} = {v}\n" for k, v in fields.items() if v is not None)


def doc(*rows: str, head: str = "schema = 1\n") -> bytes:
    return (head + "\n".join(rows)).encode()


def problems(data: bytes, allowed=("shop",)) -> list[str]:
    result = parse_oracle(data, PATH, allowed)
    assert all(p.code == INVALID_ORACLE for p in result.problems)
    return [str(p) for p in result.problems]


def test_a_valid_file_has_no_problems():
    result = parse_oracle(doc(row()), PATH, ("shop",))
    assert result.problems == []
    assert [i.id for i in result.invariants] == ["ok_row"]


BOUND = {"kind": '"bound"', "min": "0", "max": "10"}
IDEM = {"kind": '"idempotent"', "args": '["k"]', "repeat": "2"}

CASES = [
    ("bad toml", b"schema = 1\n[[invariant]\n", f"{PATH}: is not valid TOML: "),
    (
        "not utf-8",
        b"schema = 1\n# \xff\n",
        f"{PATH}: is not UTF-8: byte 0xFF at line 2, column 3 (byte offset 13) is "
        "'ÿ' in Latin-1/Windows-1252, so the file was probably saved in that "
        "encoding; save it as UTF-8",
    ),
    (
        "unknown top-level key",
        doc(row(), head="schema = 1\nowner = 'me'\n"),
        f"{PATH}: field owner: unknown top-level key 'owner'; allowed: schema, invariant, retired",
    ),
    (
        "retired not a table array",
        doc(row(), head="schema = 1\nretired = 3\n"),
        f"{PATH}: field retired: must be an array of tables ([[retired]])",
    ),
    (
        "retired unknown key",
        doc(row(), "[[retired]]\nid = 'gone'\nreason = 'x'\nsince = 2026-12-03\nby = 'me'\n"),
        f"{PATH}: row gone: field by: unknown key 'by' in a [[retired]] entry; allowed keys are id, reason, since",
    ),
    (
        "retired without reason",
        doc(row(), "[[retired]]\nid = 'gone'\nsince = 2026-12-03\n"),
        f"{PATH}: row gone: field reason: is required in a [[retired]] entry",
    ),
    (
        "retired empty reason",
        doc(row(), "[[retired]]\nid = 'gone'\nreason = ' '\nsince = 2026-12-03\n"),
        f"{PATH}: row gone: field reason: must be a non-empty one-line string saying why the row was retired",
    ),
    (
        "retired since a string",
        doc(row(), "[[retired]]\nid = 'gone'\nreason = 'x'\nsince = '2026-12-03'\n"),
        f"{PATH}: row gone: field since: must be a TOML local date "
        "such as since = 2026-12-03 (no quotes), got '2026-12-03'",
    ),
    (
        "retired since a date-time",
        doc(row(), "[[retired]]\nid = 'gone'\nreason = 'x'\nsince = 2026-12-03T10:00:00\n"),
        f"{PATH}: row gone: field since: must be a TOML local date "
        "such as since = 2026-12-03 (no quotes), "
        "got datetime.datetime(2026, 12, 3, 10, 0)",
    ),
    (
        "retired bad id",
        doc(row(), "[[retired]]\nid = 'Gone'\nreason = 'x'\nsince = 2026-12-03\n"),
        f"{PATH}: row #1: field id: 'Gone' does not match ^[a-z][a-z0-9_]{{0,63}}$",
    ),
    ("schema missing", doc(row(), head=""), f"{PATH}: field schema: is required (schema = 1)"),
    ("schema 2", doc(row(), head="schema = 2\n"), f"{PATH}: field schema: must be the integer 1, got 2"),
    ("schema bool", doc(row(), head="schema = true\n"), f"{PATH}: field schema: must be the integer 1, got True"),
    ("no rows", b"schema = 1\n", f"{PATH}: field invariant: no [[invariant]] rows"),
    (
        "only retired entries",
        b"schema = 1\n[[retired]]\nid = 'gone'\nreason = 'x'\nsince = 2026-12-03\n",
        f"{PATH}: field invariant: no [[invariant]] rows; an oracle file holds at least one: keep the [[retired]] "
        "entries of a file's last row in another oracle file",
    ),
    (
        "rows not a table array",
        b"schema = 1\ninvariant = 3\n",
        f"{PATH}: field invariant: must be an array of tables ([[invariant]])",
    ),
    (
        "unknown row key",
        doc(row(owner='"me"')),
        f"{PATH}: row ok_row: field owner: unknown key 'owner'; allowed keys are "
        "args, args_names, blob, blob_sha256, build, direction, element, entries, entry, "
        "generate, hidden_sha256, id, inverse, kind, max, memory_mib, min, over, "
        "pattern, project, raises_agree, receiver, reference, repeat, seed, timeout_s",
    ),
    ("missing entry", doc(row(entry=None)), f"{PATH}: row ok_row: field entry: is required"),
    ("missing id", doc(row(id=None)), f"{PATH}: row #1: field id: is required"),
    ("id wrong type", doc(row(id="3")), f"{PATH}: row #1: field id: must be a string, got int"),
    ("bad id", doc(row(id='"Bad-Id"')), f"{PATH}: row #1: field id: 'Bad-Id' does not match ^[a-z][a-z0-9_]{{0,63}}$"),
    (
        "id too long",
        doc(row(id='"' + "a" * 65 + '"')),
        f"{PATH}: row #1: field id: '{'a' * 65}' does not match ^[a-z][a-z0-9_]{{0,63}}$",
    ),
    ("duplicate id in file", doc(row(), row()), f"{PATH}: row ok_row: field id: duplicate id 'ok_row' in this file"),
    (
        "unknown kind",
        doc(row(kind='"fuzzy"')),
        f"{PATH}: row ok_row: field kind: unknown kind 'fuzzy'; kinds are bound, "
        "idempotent, exact_table, matches, agrees, round_trip, monotonic, "
        "antisymmetric, composed, commutative, associative, identity, back_to_back (a new kind is a schema change)",
    ),
    (
        "entry malformed",
        doc(row(entry='"shop.calc"')),
        f"{PATH}: row ok_row: field entry: 'shop.calc' is not of the form "
        "package.module:function or package.module:Class.method",
    ),
    (
        "entry os:system",
        doc(row(entry='"os:system"')),
        f"{PATH}: row ok_row: field entry: 'os:system' is not of the form "
        "package.module:function or package.module:Class.method",
    ),
    (
        "entry outside production",
        doc(row(entry='"os.path:join"')),
        f"{PATH}: row ok_row: field entry: module 'os.path' is outside the production packages policy allows (shop)",
    ),
    (
        "entry without a module",
        doc(row(entry='"shop:add"')),
        f"{PATH}: row ok_row: field entry: 'shop:add' is not of the form "
        "package.module:function or package.module:Class.method",
    ),
    ("empty row array", b"schema = 1\ninvariant = []\n", f"{PATH}: field invariant: no [[invariant]] rows"),
    (
        "entry lookalike package",
        doc(row(entry='"shopping.x:f"')),
        f"{PATH}: row ok_row: field entry: module 'shopping.x' is outside the production packages policy allows (shop)",
    ),
    (
        "blob outside blobs",
        doc(row(blob='"oracles/t.json"')),
        f"{PATH}: row ok_row: field blob: 'oracles/t.json' is outside oracles/blobs/",
    ),
    (
        "blob dotdot",
        doc(row(blob='"oracles/blobs/../x.json"')),
        f"{PATH}: row ok_row: field blob: 'oracles/blobs/../x.json' is not a "
        "normalized path (no '..', '.', or empty segments)",
    ),
    (
        "blob parent",
        doc(row(blob='"../x"')),
        f"{PATH}: row ok_row: field blob: '../x' is not a normalized path (no '..', '.', or empty segments)",
    ),
    (
        "blob absolute",
        doc(row(blob='"/etc/passwd"')),
        f"{PATH}: row ok_row: field blob: '/etc/passwd' is absolute; give a path "
        "relative to the repository root under oracles/blobs/",
    ),
    (
        "blob backslash",
        doc(row(blob='"oracles\\\\blobs\\\\t.json"')),
        f"{PATH}: row ok_row: field blob: contains a backslash; use forward slashes",
    ),
    (
        "blob is the dir",
        doc(row(blob='"oracles/blobs/"')),
        f"{PATH}: row ok_row: field blob: 'oracles/blobs/' is not a normalized path (no '..', '.', or empty segments)",
    ),
    ("blob empty", doc(row(blob='""')), f"{PATH}: row ok_row: field blob: is empty"),
    (
        "blob control char",
        doc(row(blob='"oracles/blobs/a\\n.json"')),
        f"{PATH}: row ok_row: field blob: contains a control character",
    ),
    (
        "pin uppercase",
        doc(row(blob_sha256='"' + "A" * 64 + '"')),
        f"{PATH}: row ok_row: field blob_sha256: must be 64 lowercase hex digits (the sha256 of the blob's bytes)",
    ),
    (
        "pin short",
        doc(row(blob_sha256='"abc"')),
        f"{PATH}: row ok_row: field blob_sha256: must be 64 lowercase hex digits (the sha256 of the blob's bytes)",
    ),
    ("seed bool", doc(row(seed="true")), f"{PATH}: row ok_row: field seed: must be an integer, got bool"),
    ("seed float", doc(row(seed="1.5")), f"{PATH}: row ok_row: field seed: must be an integer, got float"),
    (
        "bound min bool",
        doc(row(**{**BOUND, "min": "true"})),
        f"{PATH}: row ok_row: field min: must be a finite int or float, got a bool",
    ),
    (
        "bound max nan",
        doc(row(**{**BOUND, "max": "nan"})),
        f"{PATH}: row ok_row: field max: must be a finite int or float, got nan",
    ),
    (
        "bound max inf",
        doc(row(**{**BOUND, "max": "inf"})),
        f"{PATH}: row ok_row: field max: must be a finite int or float, got inf",
    ),
    (
        "bound min datetime",
        doc(row(**{**BOUND, "min": "1979-05-27T07:32:00Z"})),
        f"{PATH}: row ok_row: field min: must be a finite int or float, got datetime",
    ),
    (
        "bound min string",
        doc(row(**{**BOUND, "min": '"0"'})),
        f"{PATH}: row ok_row: field min: must be a finite int or float, got str",
    ),
    (
        "bound min > max",
        doc(row(**{**BOUND, "min": "11"})),
        f"{PATH}: row ok_row: field max: min (11) is greater than max (10)",
    ),
    (
        "bound without max",
        doc(row(**{**BOUND, "max": None})),
        f"{PATH}: row ok_row: field max: is required for kind 'bound'",
    ),
    (
        "bound with args",
        doc(row(**{**BOUND, "args": '["k"]'})),
        f"{PATH}: row ok_row: field args: is not allowed for kind 'bound'",
    ),
    ("exact with min", doc(row(min="0")), f"{PATH}: row ok_row: field min: is not allowed for kind 'exact_table'"),
    (
        "idem without repeat",
        doc(row(**{**IDEM, "repeat": None})),
        f"{PATH}: row ok_row: field repeat: is required for kind 'idempotent'",
    ),
    (
        "idem repeat 1",
        doc(row(**{**IDEM, "repeat": "1"})),
        f"{PATH}: row ok_row: field repeat: must be an integer from 2 to 1000, got 1",
    ),
    (
        "idem repeat bool",
        doc(row(**{**IDEM, "repeat": "true"})),
        f"{PATH}: row ok_row: field repeat: must be an integer from 2 to 1000, got bool",
    ),
    (
        "idem args not strings",
        doc(row(**{**IDEM, "args": "[1]"})),
        f"{PATH}: row ok_row: field args: must be an array of strings",
    ),
    (
        "idem args not identifiers",
        doc(row(**{**IDEM, "args": '["a-b"]'})),
        f"{PATH}: row ok_row: field args: 'a-b' is not a usable keyword argument name",
    ),
    (
        "idem args twice",
        doc(row(**{**IDEM, "args": '["k", "k"]'})),
        f"{PATH}: row ok_row: field args: names a field twice",
    ),
    (
        "idem args state",
        doc(row(**{**IDEM, "args": '["state"]'})),
        f"{PATH}: row ok_row: field args: 'state' is not a usable keyword argument name",
    ),
    (
        "int beyond 64 bits",
        doc(row(**{**BOUND, "max": str(2**63)})),
        f"{PATH}: row ok_row: field max: must be a finite int or float, got {2**63}",
    ),
]


@pytest.mark.parametrize(("data", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error_path_message_and_code(data, message):
    found = problems(data)
    assert found, "expected a problem"
    assert found[0].startswith(message) if message.endswith(": ") else found[0] == message, found


def test_bound_float_bounds_are_accepted():
    assert problems(doc(row(**{**BOUND, "min": "-0.5", "max": "1e3"}))) == []


def test_duplicate_id_across_files():
    a = parse_oracle(doc(row()), "oracles/a.toml", None)
    b = parse_oracle(doc(row()), "oracles/b.toml", None)
    errs = duplicate_ids([a, b])
    assert [str(e) for e in errs] == [
        "oracles/b.toml: row ok_row: field id: duplicate id 'ok_row', already declared in oracles/a.toml"
    ]
    assert errs[0].code == 5


def test_every_problem_in_a_file_is_reported():
    found = problems(doc(row(kind='"fuzzy"', seed="true"), row(id='"second"', blob='"../x"')))
    assert len(found) == 3


# --- timeout_s and generate: every rejection names the path, the row and the (dotted) field. ---

TIMEOUT_RULE = "must be a number of seconds with 0 < timeout_s <= 3600, got "
TIMEOUT_CASES = [
    ("bool", "true", "a bool"),
    ("string", '"10"', "str"),
    ("zero", "0", "0"),
    ("zero float", "0.0", "0.0"),
    ("negative", "-1", "-1"),
    ("above an hour", "3600.5", "3600.5"),
    ("nan", "nan", "nan"),
    ("inf", "inf", "inf"),
    ("beyond 64 bits", str(2**63), str(2**63)),
    ("datetime", "1979-05-27T07:32:00Z", "datetime"),
    ("array", "[1]", "list"),
]


@pytest.mark.parametrize(("value", "got"), [c[1:] for c in TIMEOUT_CASES], ids=[c[0] for c in TIMEOUT_CASES])
def test_timeout_s_rejections(value, got):
    result = parse_oracle(doc(row(timeout_s=value)), PATH, ("shop",))
    assert [(e.path, e.row, e.field, e.code, e.message) for e in result.problems] == [
        (PATH, "ok_row", "timeout_s", INVALID_ORACLE, TIMEOUT_RULE + got)
    ]


@pytest.mark.parametrize(("value", "expected"), [("1", 1.0), ("0.001", 0.001), ("3600", 3600.0), ("2.5", 2.5)])
def test_timeout_s_accepted_on_every_kind(value, expected):
    for kind in ({}, BOUND, IDEM):
        result = parse_oracle(doc(row(**kind, timeout_s=value)), PATH, ("shop",))
        assert result.problems == []
        assert result.invariants[0].timeout_s == expected


def test_timeout_s_defaults_to_sixty_seconds():
    assert DEFAULT_TIMEOUT_S == 60
    assert parse_oracle(doc(row()), PATH, ("shop",)).invariants[0].timeout_s == 60


MEMORY_RULE = "must be an integer number of MiB from 256 to 65536, got "
MEMORY_CASES = [
    ("bool", "true", "a bool"),
    ("float", "1024.0", "float"),
    ("string", '"1024"', "str"),
    ("too small", "255", "255"),
    ("too large", "65537", "65537"),
    ("negative", "-1", "-1"),
]


@pytest.mark.parametrize(("value", "got"), [c[1:] for c in MEMORY_CASES], ids=[c[0] for c in MEMORY_CASES])
def test_memory_mib_rejections(value, got):
    result = parse_oracle(doc(row(memory_mib=value)), PATH, ("shop",))
    assert [(e.path, e.row, e.field, e.code, e.message) for e in result.problems] == [
        (PATH, "ok_row", "memory_mib", INVALID_ORACLE, MEMORY_RULE + got)
    ]


def test_memory_mib_defaults_to_two_gib_and_may_be_raised():
    assert parse_oracle(doc(row()), PATH, ("shop",)).invariants[0].memory_mib == 2048
    for kind in ({}, BOUND, IDEM):
        assert parse_oracle(doc(row(**kind, memory_mib="8192")), PATH, ("shop",)).invariants[0].memory_mib == 8192


def gen_row(body: str, kind: dict[str, str] | None = None, **overrides: str) -> bytes:
    """A row of `kind` (bound by default) with `generate = { <body> }`."""
    return doc(row(**{**(kind or BOUND), **overrides, "generate": "{ " + body + " }"}))


def nested_lists(levels: int) -> str:
    """A generator of `levels` nested lists around an int generator (levels + 1 levels in all)."""
    spec = "{ int = [0, 1] }"
    for _ in range(levels):
        spec = "{ list = " + spec + ", len = [0, 1] }"
    return spec


N = "must be [lo, hi], two signed 64-bit integers with lo <= hi, got "
F = "must be [lo, hi], two finite numbers with lo <= hi, got "
LEN = "must be [min, max], two integers with 0 <= min <= max <= 4096, got "
KINDS_TEXT = "choice, float, int, list, object, one_of, optional, set, string, tuple"
UNKNOWN = (
    "; a generator has exactly one of " + KINDS_TEXT + ", and len with list, set and string (and pieces with string)"
)

GENERATE_CASES = [
    # (name, data, field, message)
    (
        "on exact_table",
        doc(row(generate="{ count = 1 }")),
        "generate",
        "is not allowed for kind 'exact_table' without a reference: a generated "
        "sample has no stored expected value, so the reference must give it",
    ),
    ("not a table", doc(row(**BOUND, generate="3")), "generate", "must be a table ([invariant.generate]), got 3"),
    ("count missing", gen_row("x = { int = [0, 1] }"), "generate.count", "is required (the number of samples to draw)"),
    (
        "count zero",
        gen_row("count = 0, x = { int = [0, 1] }"),
        "generate.count",
        "must be an integer from 1 to 100000, got 0",
    ),
    (
        "count too big",
        gen_row("count = 100001, x = { int = [0, 1] }"),
        "generate.count",
        "must be an integer from 1 to 100000, got 100001",
    ),
    (
        "count bool",
        gen_row("count = true, x = { int = [0, 1] }"),
        "generate.count",
        "must be an integer from 1 to 100000, got a bool",
    ),
    (
        "count float",
        gen_row("count = 2.0, x = { int = [0, 1] }"),
        "generate.count",
        "must be an integer from 1 to 100000, got 2.0",
    ),
    (
        "bound without fields",
        gen_row("count = 2"),
        "generate",
        "needs a generator for at least one keyword argument besides count",
    ),
    (
        "bound field not an identifier",
        gen_row('count = 2, "a-b" = { int = [0, 1] }'),
        "generate.a-b",
        "'a-b' is not a usable keyword argument name",
    ),
    (
        "bound field with a space",
        gen_row('count = 2, "a b" = { int = [0, 1] }'),
        'generate."a b"',
        "'a b' is not a usable keyword argument name",
    ),
    (
        "idempotent missing an arg",
        gen_row("count = 2, state = { int = [0, 1] }", IDEM),
        "generate",
        "has no generator for k; an idempotent row generates state and every name in args",
    ),
    (
        "idempotent missing state",
        gen_row("count = 2, k = { int = [0, 1] }", IDEM),
        "generate",
        "has no generator for state; an idempotent row generates state and every name in args",
    ),
    (
        "idempotent extra field",
        gen_row("count = 2, state = { int = [0, 1] }, k = { int = [0, 1] }, j = { int = [0, 1] }", IDEM),
        "generate.j",
        "is neither state nor a name in args; an idempotent row generates exactly those",
    ),
    (
        "idempotent arg named count",
        gen_row("count = 2, state = { int = [0, 1] }", {**IDEM, "args": '["count"]'}),
        "generate",
        "cannot generate the argument 'count': count is the number of samples",
    ),
    (
        "generator not a table",
        gen_row("count = 2, x = 3"),
        "generate.x",
        f"must be a generator table with one of the keys {KINDS_TEXT}, got 3",
    ),
    (
        "generator empty",
        gen_row("count = 2, x = {}"),
        "generate.x",
        f"has no generator kind; give exactly one of {KINDS_TEXT}",
    ),
    (
        "generator only len",
        gen_row("count = 2, x = { len = [0, 1] }"),
        "generate.x",
        f"has no generator kind; give exactly one of {KINDS_TEXT}",
    ),
    (
        "unknown kind",
        gen_row("count = 2, x = { integer = [0, 1] }"),
        "generate.x.integer",
        "unknown key 'integer'" + UNKNOWN,
    ),
    (
        "two kinds",
        gen_row("count = 2, x = { int = [0, 1], float = [0, 1] }"),
        "generate.x",
        "has 2 generator kinds (int, float); give exactly one",
    ),
    (
        "unknown modifier",
        gen_row("count = 2, x = { int = [0, 1], step = 1 }"),
        "generate.x.step",
        "unknown key 'step'" + UNKNOWN,
    ),
    (
        "len on int",
        gen_row("count = 2, x = { int = [0, 1], len = [0, 1] }"),
        "generate.x.len",
        "is not allowed for generator kind 'int'",
    ),
    (
        "len on choice",
        gen_row("count = 2, x = { choice = [1], len = [0, 1] }"),
        "generate.x.len",
        "is not allowed for generator kind 'choice'",
    ),
    (
        "string without len",
        gen_row('count = 2, x = { string = "ab" }'),
        "generate.x.len",
        "is required for generator kind 'string'",
    ),
    (
        "list without len",
        gen_row("count = 2, x = { list = { int = [0, 1] } }"),
        "generate.x.len",
        "is required for generator kind 'list'",
    ),
    (
        "int lo > hi",
        gen_row("count = 2, x = { int = [2, 1] }"),
        "generate.x.int",
        "lower bound (2) is greater than upper bound (1)",
    ),
    ("int bool", gen_row("count = 2, x = { int = [false, 1] }"), "generate.x.int", N + "a bool in it"),
    ("int float", gen_row("count = 2, x = { int = [0, 1.5] }"), "generate.x.int", N + "1.5 in it"),
    ("int one bound", gen_row("count = 2, x = { int = [0] }"), "generate.x.int", N + "an array of 1 value"),
    ("int three bounds", gen_row("count = 2, x = { int = [0, 1, 2] }"), "generate.x.int", N + "an array of 3 values"),
    ("int not an array", gen_row('count = 2, x = { int = "0..1" }'), "generate.x.int", N + "a string"),
    (
        "int beyond 64 bits",
        gen_row(f"count = 2, x = {{ int = [0, {2**63}] }}"),
        "generate.x.int",
        N + f"{2**63}, outside {-(2**63)}..{2**63 - 1}",
    ),
    ("int datetime", gen_row("count = 2, x = { int = [1979-05-27, 1] }"), "generate.x.int", N + "a date or time in it"),
    ("float nan", gen_row("count = 2, x = { float = [nan, 1] }"), "generate.x.float", F + "nan in it"),
    ("float inf", gen_row("count = 2, x = { float = [0, inf] }"), "generate.x.float", F + "inf in it"),
    ("float -inf", gen_row("count = 2, x = { float = [-inf, 0] }"), "generate.x.float", F + "-inf in it"),
    ("float bool", gen_row("count = 2, x = { float = [0, true] }"), "generate.x.float", F + "a bool in it"),
    ("float string", gen_row('count = 2, x = { float = ["0", 1] }'), "generate.x.float", F + "a string in it"),
    (
        "float int beyond 64 bits",
        gen_row(f"count = 2, x = {{ float = [0, {2**63}] }}"),
        "generate.x.float",
        F + f"{2**63} in it",
    ),
    (
        "float lo > hi",
        gen_row("count = 2, x = { float = [1.5, -1] }"),
        "generate.x.float",
        "lower bound (1.5) is greater than upper bound (-1)",
    ),
    ("float not an array", gen_row("count = 2, x = { float = 1.0 }"), "generate.x.float", F + "1.0"),
    (
        "choice empty",
        gen_row("count = 2, x = { choice = [] }"),
        "generate.x.choice",
        "must be a non-empty array of values, got an array of 0 values",
    ),
    (
        "choice not an array",
        gen_row('count = 2, x = { choice = "ab" }'),
        "generate.x.choice",
        "must be a non-empty array of values, got a string",
    ),
    (
        "choice nan",
        gen_row("count = 2, x = { choice = [1, nan] }"),
        "generate.x.choice",
        "element 1: nan is not finite",
    ),
    (
        "choice inf in a table",
        gen_row("count = 2, x = { choice = [{ a = [inf] }] }"),
        "generate.x.choice",
        "element 0: inf is not finite",
    ),
    (
        "choice datetime",
        gen_row("count = 2, x = { choice = [1979-05-27T07:32:00Z] }"),
        "generate.x.choice",
        "element 0: a date or time is not allowed (only strings, numbers, bools, arrays and tables)",
    ),
    (
        "choice local time in an array",
        gen_row("count = 2, x = { choice = [[07:32:00]] }"),
        "generate.x.choice",
        "element 0: a date or time is not allowed (only strings, numbers, bools, arrays and tables)",
    ),
    (
        "choice int beyond 64 bits",
        gen_row(f"count = 2, x = {{ choice = [{-(2**63) - 1}] }}"),
        "generate.x.choice",
        f"element 0: {-(2**63) - 1} does not fit in a signed 64-bit integer",
    ),
    (
        "choice too deep",
        gen_row("count = 2, x = { choice = [" + "[" * MAX_DEPTH + "1" + "]" * MAX_DEPTH + "] }"),
        "generate.x.choice",
        "element 0: nests deeper than 16 levels",
    ),
    (
        "string empty alphabet",
        gen_row('count = 2, x = { string = "", len = [0, 1] }'),
        "generate.x.string",
        "must be a non-empty string of the characters to draw from, got a string",
    ),
    (
        "string alphabet array",
        gen_row('count = 2, x = { string = ["a"], len = [0, 1] }'),
        "generate.x.string",
        "must be a non-empty string of the characters to draw from, got an array of 1 value",
    ),
    (
        "len negative",
        gen_row('count = 2, x = { string = "a", len = [-1, 1] }'),
        "generate.x.len",
        LEN + "-1, outside 0..4096",
    ),
    (
        "len too long",
        gen_row("count = 2, x = { list = { int = [0, 1] }, len = [0, 4097] }"),
        "generate.x.len",
        LEN + "4097, outside 0..4096",
    ),
    (
        "len min > max",
        gen_row('count = 2, x = { string = "a", len = [3, 2] }'),
        "generate.x.len",
        "lower bound (3) is greater than upper bound (2)",
    ),
    ("len bool", gen_row('count = 2, x = { string = "a", len = [0, true] }'), "generate.x.len", LEN + "a bool in it"),
    ("len float", gen_row('count = 2, x = { string = "a", len = [0, 1.0] }'), "generate.x.len", LEN + "1.0 in it"),
    ("len not an array", gen_row('count = 2, x = { string = "a", len = 3 }'), "generate.x.len", LEN + "3"),
    (
        "list item bad",
        gen_row("count = 2, x = { list = { int = [1, 0] }, len = [0, 1] }"),
        "generate.x.list.int",
        "lower bound (1) is greater than upper bound (0)",
    ),
    (
        "list item not a table",
        gen_row("count = 2, x = { list = 1, len = [0, 1] }"),
        "generate.x.list",
        f"must be a generator table with one of the keys {KINDS_TEXT}, got 1",
    ),
    (
        "object empty",
        gen_row("count = 2, x = { object = {} }"),
        "generate.x.object",
        "must be a table of at least one member generator, got a table",
    ),
    (
        "object not a table",
        gen_row("count = 2, x = { object = [1] }"),
        "generate.x.object",
        "must be a table of at least one member generator, got an array of 1 value",
    ),
    (
        "object member bad",
        gen_row('count = 2, x = { object = { "unit price" = { int = [0, true] } } }'),
        'generate.x.object."unit price".int',
        N + "a bool in it",
    ),
    (
        "nested path",
        gen_row("count = 2, lines = { list = { object = { quantity = { int = [0, 1.5] } } }, len = [0, 6] }"),
        "generate.lines.list.object.quantity.int",
        N + "1.5 in it",
    ),
    (
        "idempotent state generator bad",
        gen_row("count = 2, state = { list = { int = [0, 1] } }, k = { int = [0, 1] }", IDEM),
        "generate.state.len",
        "is required for generator kind 'list'",
    ),
    (
        "nested too deep",
        gen_row("count = 2, x = " + nested_lists(MAX_DEPTH)),
        "generate.x" + ".list" * MAX_DEPTH,
        "nests deeper than 16 levels",
    ),
    (
        "pieces on int",
        gen_row('count = 2, x = { int = [0, 1], pieces = ["a"] }'),
        "generate.x.pieces",
        "is not allowed for generator kind 'int'",
    ),
    (
        "pieces empty",
        gen_row('count = 2, x = { string = "ab", len = [0, 2], pieces = [] }'),
        "generate.x.pieces",
        "must be an array of 1 to 64 strings of 1 to 64 characters, got an array of 0 values",
    ),
    (
        "piece empty",
        gen_row('count = 2, x = { string = "ab", len = [0, 2], pieces = ["ok", ""] }'),
        "generate.x.pieces",
        "element 1: must be a string of 1 to 64 characters, got a string",
    ),
    (
        "one_of of one",
        gen_row("count = 2, x = { one_of = [{ int = [0, 1] }] }"),
        "generate.x.one_of",
        "must be an array of 2 to 64 generators, got an array of 1 value",
    ),
    (
        "one_of with a bad option",
        gen_row('count = 2, x = { one_of = [{ int = [0, 1] }, { string = "a" }] }'),
        "generate.x.one_of[1].len",
        "is required for generator kind 'string'",
    ),
]


@pytest.mark.parametrize(
    ("data", "fieldname", "message"), [c[1:] for c in GENERATE_CASES], ids=[c[0] for c in GENERATE_CASES]
)
def test_generate_rejections(data, fieldname, message):
    result = parse_oracle(data, PATH, ("shop",))
    assert [(e.path, e.row, e.field, e.code, e.message) for e in result.problems] == [
        (PATH, "ok_row", fieldname, INVALID_ORACLE, message)
    ]
    assert result.invariants == []


def test_generate_error_text_names_the_dotted_field():
    found = problems(
        gen_row("count = 2, lines = { list = { object = { quantity = { int = [5, 0] } } }, len = [0, 6] }")
    )
    assert found == [
        f"{PATH}: row ok_row: field generate.lines.list.object.quantity.int: "
        "lower bound (5) is greater than upper bound (0)"
    ]


def test_generate_reports_every_problem_of_a_row():
    data = gen_row("count = 0, x = { int = [1, 0] }, y = { string = 3, len = [2, 1] }, z = { float = [0, nan] }")
    assert [e.field for e in parse_oracle(data, PATH, ("shop",)).problems] == [
        "generate.count",
        "generate.x.int",
        "generate.y.len",
        "generate.y.string",
        "generate.z.float",
    ]


def test_generate_does_not_repeat_an_args_error():
    data = gen_row("count = 2, state = { int = [0, 1] }", {**IDEM, "args": '["a-b"]'})
    assert [e.field for e in parse_oracle(data, PATH, ("shop",)).problems] == ["args"]


def test_generate_nesting_of_sixteen_levels_is_accepted():
    assert problems(gen_row("count = 2, x = " + nested_lists(MAX_DEPTH - 1))) == []
    deepest = "[" * (MAX_DEPTH - 1) + "1" + "]" * (MAX_DEPTH - 1)
    assert problems(gen_row(f"count = 2, x = {{ choice = [{deepest}] }}")) == []


def test_generate_as_a_sub_table_and_the_row_stays_hashable():
    data = doc(
        row(**BOUND, seed="3", timeout_s="5") + "[invariant.generate]\ncount = 4\n"
        'a = { int = [-3, 3] }\nb = { choice = [1, 1.0, true, "1"] }\n'
    )
    result = parse_oracle(data, PATH, ("shop",))
    assert result.problems == []
    inv = result.invariants[0]
    assert inv.generate == GenerateSpec(4, (("a", IntGen(-3, 3)), ("b", ChoiceGen(("1", "1.0", "true", '"1"')))))
    assert inv.timeout_s == 5.0
    assert hash(inv) == hash(parse_oracle(data, PATH, ("shop",)).invariants[0])


def test_idempotent_generate_fields_in_any_order():
    data = gen_row("count = 1, k = { int = [0, 1] }, state = { int = [0, 1] }", IDEM)
    result = parse_oracle(data, PATH, ("shop",))
    assert result.problems == []
    assert [name for name, _ in result.invariants[0].generate.fields] == ["state", "k"]


def test_rows_without_generate_have_none():
    assert parse_oracle(doc(row(**BOUND)), PATH, ("shop",)).invariants[0].generate is None


def test_retired_entries_are_parsed_and_a_reused_or_twice_retired_id_is_exit_5():
    import datetime

    from tools.oracle_gate.spec.schema import retired_problems

    tomb = "[[retired]]\nid = 'ok_row'\nreason = 'deprecated'\nsince = 2026-12-03\n"
    first = parse_oracle(doc(row(id='"other"'), tomb), PATH, ("shop",))
    assert first.problems == []
    assert [(r.id, r.reason, r.since, r.source) for r in first.retired] == [
        ("ok_row", "deprecated", datetime.date(2026, 12, 3), PATH)
    ]
    reuse = parse_oracle(doc(row()), "oracles/y.toml", ("shop",))
    found = [str(p) for p in retired_problems([first, reuse])]
    assert found == [
        "oracles/y.toml: row ok_row: field id: reuses the id 'ok_row', retired in oracles/x.toml since "
        "2026-12-03 (deprecated); a retired id can never be reused: give the row a new id"
    ]
    twice = parse_oracle(doc(row(id='"third"'), tomb), "oracles/z.toml", ("shop",))
    assert [str(p) for p in retired_problems([first, twice])] == [
        "oracles/z.toml: row ok_row: field retired: 'ok_row' is retired twice, already in oracles/x.toml"
    ]
    assert all(p.code == INVALID_ORACLE for p in retired_problems([first, reuse, twice]))


def test_raises_agree_is_a_boolean_of_a_row_whose_reference_judges_every_sample():
    agrees = row(kind='"agrees"', reference='"oracles.reference.r:f"')
    generate = "[invariant.generate]\ncount = 2\na = { int = [0, 1] }\n"
    [inv] = parse_oracle(
        doc(agrees.replace("[[invariant]]\n", "[[invariant]]\nraises_agree = true\n") + generate), PATH
    ).invariants
    assert inv.raises_agree is True
    [plain] = parse_oracle(doc(agrees + generate), PATH).invariants
    assert plain.raises_agree is False
    assert problems(doc(row(raises_agree="1"))) == [
        f"{PATH}: row ok_row: field raises_agree: must be true or false, got int"
    ]
    assert problems(doc(row(raises_agree="true"))) == [
        f"{PATH}: row ok_row: field raises_agree: is not allowed for kind 'exact_table' without a reference that "
        "judges every sample (agrees, composed with a reference)"
    ]


def test_raises_cannot_name_an_argument_or_a_generated_field():
    assert problems(doc(row(args_names='["raises"]'))) == [
        f"{PATH}: row ok_row: field args_names: 'raises' is not a usable argument name"
    ]
    bound = row(kind='"bound"', min="0", max="1") + "[invariant.generate]\ncount = 2\nraises = { int = [0, 1] }\n"
    assert problems(doc(bound)) == [
        f"{PATH}: row ok_row: field generate.raises: is a sample's expected exception, not an argument: it cannot "
        "be generated"
    ]
