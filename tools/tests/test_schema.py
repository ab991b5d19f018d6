"""Schema 1 loader: every error path, with its exact message and exit code (5)."""

from __future__ import annotations

import pytest

from tools.oracle_gate.errors import INVALID_ORACLE
from tools.oracle_gate.schema import duplicate_ids, parse_oracle

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
    ("not utf-8", b"schema = 1\n# \xff\n", f"{PATH}: is not UTF-8 (byte 13)"),
    ("unknown top-level key", doc(row(), head="schema = 1\nowner = 'me'\n"),
     f"{PATH}: field owner: unknown top-level key 'owner'; allowed: schema, invariant"),
    ("schema missing", doc(row(), head=""), f"{PATH}: field schema: is required (schema = 1)"),
    ("schema 2", doc(row(), head="schema = 2\n"), f"{PATH}: field schema: must be the integer 1, got 2"),
    ("schema bool", doc(row(), head="schema = true\n"), f"{PATH}: field schema: must be the integer 1, got True"),
    ("no rows", b"schema = 1\n", f"{PATH}: field invariant: no [[invariant]] rows"),
    ("rows not a table array", b"schema = 1\ninvariant = 3\n", f"{PATH}: field invariant: must be an array of tables ([[invariant]])"),
    ("unknown row key", doc(row(owner='"me"')),
     f"{PATH}: row ok_row: field owner: unknown key 'owner'; allowed keys are args, blob, blob_sha256, entry, id, kind, max, min, repeat, seed"),
    ("missing entry", doc(row(entry=None)), f"{PATH}: row ok_row: field entry: is required"),
    ("missing id", doc(row(id=None)), f"{PATH}: row #1: field id: is required"),
    ("id wrong type", doc(row(id="3")), f"{PATH}: row #1: field id: must be a string, got int"),
    ("bad id", doc(row(id='"Bad-Id"')), f"{PATH}: row #1: field id: 'Bad-Id' does not match ^[a-z][a-z0-9_]{{0,63}}$"),
    ("id too long", doc(row(id='"' + "a" * 65 + '"')), f"{PATH}: row #1: field id: '{'a' * 65}' does not match ^[a-z][a-z0-9_]{{0,63}}$"),
    ("duplicate id in file", doc(row(), row()), f"{PATH}: row ok_row: field id: duplicate id 'ok_row' in this file"),
    ("unknown kind", doc(row(kind='"fuzzy"')),
     f"{PATH}: row ok_row: field kind: unknown kind 'fuzzy'; kinds are bound, idempotent, exact_table (a new kind is a schema change)"),
    ("entry malformed", doc(row(entry='"shop.calc"')), f"{PATH}: row ok_row: field entry: 'shop.calc' is not of the form package.module:function"),
    ("entry os:system", doc(row(entry='"os:system"')), f"{PATH}: row ok_row: field entry: 'os:system' is not of the form package.module:function"),
    ("entry outside production", doc(row(entry='"os.path:join"')),
     f"{PATH}: row ok_row: field entry: module 'os.path' is outside the production packages policy allows (shop)"),
    ("entry without a module", doc(row(entry='"shop:add"')), f"{PATH}: row ok_row: field entry: 'shop:add' is not of the form package.module:function"),
    ("empty row array", b"schema = 1\ninvariant = []\n", f"{PATH}: field invariant: no [[invariant]] rows"),
    ("entry lookalike package", doc(row(entry='"shopping.x:f"')),
     f"{PATH}: row ok_row: field entry: module 'shopping.x' is outside the production packages policy allows (shop)"),
    ("blob outside blobs", doc(row(blob='"oracles/t.json"')), f"{PATH}: row ok_row: field blob: 'oracles/t.json' is outside oracles/blobs/"),
    ("blob dotdot", doc(row(blob='"oracles/blobs/../x.json"')),
     f"{PATH}: row ok_row: field blob: 'oracles/blobs/../x.json' is not a normalized path (no '..', '.', or empty segments)"),
    ("blob parent", doc(row(blob='"../x"')), f"{PATH}: row ok_row: field blob: '../x' is not a normalized path (no '..', '.', or empty segments)"),
    ("blob absolute", doc(row(blob='"/etc/passwd"')),
     f"{PATH}: row ok_row: field blob: '/etc/passwd' is absolute; give a path relative to the repository root under oracles/blobs/"),
    ("blob backslash", doc(row(blob='"oracles\\\\blobs\\\\t.json"')), f"{PATH}: row ok_row: field blob: contains a backslash; use forward slashes"),
    ("blob is the dir", doc(row(blob='"oracles/blobs/"')),
     f"{PATH}: row ok_row: field blob: 'oracles/blobs/' is not a normalized path (no '..', '.', or empty segments)"),
    ("blob empty", doc(row(blob='""')), f"{PATH}: row ok_row: field blob: is empty"),
    ("blob control char", doc(row(blob='"oracles/blobs/a\\n.json"')), f"{PATH}: row ok_row: field blob: contains a control character"),
    ("pin uppercase", doc(row(blob_sha256='"' + "A" * 64 + '"')),
     f"{PATH}: row ok_row: field blob_sha256: must be 64 lowercase hex digits (the sha256 of the blob's bytes)"),
    ("pin short", doc(row(blob_sha256='"abc"')),
     f"{PATH}: row ok_row: field blob_sha256: must be 64 lowercase hex digits (the sha256 of the blob's bytes)"),
    ("seed bool", doc(row(seed="true")), f"{PATH}: row ok_row: field seed: must be an integer, got bool"),
    ("seed float", doc(row(seed="1.5")), f"{PATH}: row ok_row: field seed: must be an integer, got float"),
    ("bound min bool", doc(row(**{**BOUND, "min": "true"})), f"{PATH}: row ok_row: field min: must be a finite int or float, got a bool"),
    ("bound max nan", doc(row(**{**BOUND, "max": "nan"})), f"{PATH}: row ok_row: field max: must be a finite int or float, got nan"),
    ("bound max inf", doc(row(**{**BOUND, "max": "inf"})), f"{PATH}: row ok_row: field max: must be a finite int or float, got inf"),
    ("bound min datetime", doc(row(**{**BOUND, "min": "1979-05-27T07:32:00Z"})),
     f"{PATH}: row ok_row: field min: must be a finite int or float, got datetime"),
    ("bound min string", doc(row(**{**BOUND, "min": '"0"'})), f"{PATH}: row ok_row: field min: must be a finite int or float, got str"),
    ("bound min > max", doc(row(**{**BOUND, "min": "11"})), f"{PATH}: row ok_row: field max: min (11) is greater than max (10)"),
    ("bound without max", doc(row(**{**BOUND, "max": None})), f"{PATH}: row ok_row: field max: is required for kind 'bound'"),
    ("bound with args", doc(row(**{**BOUND, "args": '["k"]'})), f"{PATH}: row ok_row: field args: is not allowed for kind 'bound'"),
    ("exact with min", doc(row(min="0")), f"{PATH}: row ok_row: field min: is not allowed for kind 'exact_table'"),
    ("idem without repeat", doc(row(**{**IDEM, "repeat": None})), f"{PATH}: row ok_row: field repeat: is required for kind 'idempotent'"),
    ("idem repeat 1", doc(row(**{**IDEM, "repeat": "1"})), f"{PATH}: row ok_row: field repeat: must be an integer from 2 to 1000, got 1"),
    ("idem repeat bool", doc(row(**{**IDEM, "repeat": "true"})), f"{PATH}: row ok_row: field repeat: must be an integer from 2 to 1000, got bool"),
    ("idem args not strings", doc(row(**{**IDEM, "args": "[1]"})), f"{PATH}: row ok_row: field args: must be an array of strings"),
    ("idem args not identifiers", doc(row(**{**IDEM, "args": '["a-b"]'})), f"{PATH}: row ok_row: field args: 'a-b' is not a usable keyword argument name"),
    ("idem args twice", doc(row(**{**IDEM, "args": '["k", "k"]'})), f"{PATH}: row ok_row: field args: names a field twice"),
    ("idem args state", doc(row(**{**IDEM, "args": '["state"]'})), f"{PATH}: row ok_row: field args: 'state' is not a usable keyword argument name"),
    ("int beyond 64 bits", doc(row(**{**BOUND, "max": str(2**63)})),
     f"{PATH}: row ok_row: field max: must be a finite int or float, got {2**63}"),
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
    assert [str(e) for e in errs] == ["oracles/b.toml: row ok_row: field id: duplicate id 'ok_row', already declared in oracles/a.toml"]
    assert errs[0].code == 5


def test_every_problem_in_a_file_is_reported():
    found = problems(doc(row(kind='"fuzzy"', seed="true"), row(id='"second"', blob='"../x"')))
    assert len(found) == 3
