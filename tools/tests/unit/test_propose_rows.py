"""authoring/propose_rows.py: whole candidate rows for every public function, valid as they are, and
the behaviour-kept rows of changed functions."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from tools.oracle_gate.authoring.propose import HeadRows, Row
from tools.oracle_gate.authoring.propose_rows import KEPT_COUNT, PROPOSED_COUNT, kept_rows, survey_all
from tools.oracle_gate.authoring.propose_write import plan, write
from tools.oracle_gate.git.functions import Found
from tools.oracle_gate.git.tree import WorkTree
from tools.oracle_gate.spec import kinds
from tools.oracle_gate.spec.schema import parse_oracle
from tools.testing.rowrun import run_tree

CODEC = textwrap.dedent(
    """\
    from typing import NamedTuple


    class Money(NamedTuple):
        cents: int
        currency: str


    def encode_ints(values: list[int]) -> str:
        return ",".join(str(v) for v in values)


    def decode_ints(text: str) -> list[int]:
        return [int(v) for v in text.split(",")] if text else []


    def normalize_name(name: str) -> str:
        return " ".join(name.split()).lower()


    def add(a: int, b: int) -> int:
        return a + b


    def concat(a: str, b: str) -> str:
        return a + b


    def subtract(a: int, b: int) -> int:
        return a - b


    def merge_money(a: Money, b: Money) -> Money:
        return Money(a.cents + b.cents, a.currency)


    def describe(x) -> str:
        return str(x)


    def _private(a: int, b: int) -> int:
        return a


    class Cart:
        def total(self) -> int:
            return 0
    """
)


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "codec.py").write_text(CODEC)
    (tmp_path / "oracles").mkdir()
    return tmp_path


def test_every_public_function_is_listed_with_its_candidates_or_why_none(shop):
    result = survey_all(WorkTree(str(shop)), ["shop"], HeadRows(), ["shop"])
    assert [(item.entry, item.note) for item in result.listed] == [
        ("shop.codec:encode_ints", "candidate encode_ints_round_trip, encode_ints_kept"),
        ("shop.codec:decode_ints", "candidate decode_ints_kept"),
        ("shop.codec:normalize_name", "candidate normalize_name_is_idempotent, normalize_name_kept"),
        ("shop.codec:add", "candidate add_commutative, add_associative, add_identity, add_kept"),
        ("shop.codec:concat", "candidate concat_associative, concat_identity, concat_kept"),
        ("shop.codec:subtract", "candidate subtract_kept"),
        ("shop.codec:merge_money", "candidate merge_money_commutative, merge_money_associative, merge_money_kept"),
        ("shop.codec:describe", "no candidate: parameter `x`: no annotation"),
        (
            "shop.codec:Cart.total",
            "no candidate: parameter `self`: the gate cannot build the object a method is called on",
        ),
    ]
    rows = {p.id: p.row for p in result.proposed}
    assert rows["encode_ints_round_trip"]["inverse"] == "shop.codec:decode_ints"
    assert rows["add_identity"]["element"] == 0 and rows["concat_identity"]["element"] == ""
    assert rows["merge_money_associative"]["build"] == {k: "shop.codec:Money" for k in "abc"}
    assert rows["merge_money_associative"]["project"] == "list"
    assert rows["merge_money_kept"]["project"] == {"attrs": ["cents", "currency"]}  # `-> Money`, a NamedTuple
    assert "project" not in rows["add_kept"]
    assert all(
        p.row["generate"]["count"] == (KEPT_COUNT if p.row["kind"] == "back_to_back" else PROPOSED_COUNT)
        and len(p.samples) == 3
        for p in result.proposed
    )
    assert {p.oracle_file for p in result.proposed} == {"oracles/shop.toml"}


def test_the_rows_pass_the_schema_and_run_as_they_are(shop, tmp_path):
    result = survey_all(WorkTree(str(shop)), ["shop"], HeadRows(), ["shop"])
    write(str(shop), plan(str(shop), result.proposed))
    parsed = parse_oracle((shop / "oracles" / "shop.toml").read_bytes(), "oracles/shop.toml", ["shop"])
    assert [p.field for p in parsed.problems] == ["blob_sha256"] * len(result.proposed)  # `pin --write` next
    text = (shop / "oracles" / "shop.toml").read_text()
    pinned = text.replace('.json"\n', '.json"\nblob_sha256 = "' + "0" * 64 + '"\n')
    (shop / "oracles" / "shop.toml").write_text(pinned)
    judged = run_tree(shop, tmp_path / "run", "shop", salt="s")
    assert {ident: j.ok for ident, j in judged.items()} == {
        "encode_ints_round_trip": True,
        "normalize_name_is_idempotent": True,
        "add_commutative": True,
        "add_associative": True,
        "add_identity": True,
        "concat_associative": True,
        "concat_identity": True,
        "merge_money_commutative": False,  # the first currency wins: a claim a reviewer drops
        "merge_money_associative": True,
        **{f"{name}_kept": True for name in ("encode_ints", "decode_ints", "normalize_name", "add", "concat")},
        **{f"{name}_kept": True for name in ("subtract", "merge_money")},
    }


def test_an_entry_with_a_row_of_a_kind_gets_no_other_of_that_kind_and_ids_never_repeat(shop):
    rows = HeadRows(
        (
            Row("add_commutative", "shop.other:x", "oracles/shop.toml", "bound"),
            Row("mine", "shop.codec:add", "oracles/shop.toml", "commutative"),
        ),
        ("oracles/shop.toml",),
    )
    result = survey_all(WorkTree(str(shop)), ["shop"], rows, ["shop"])
    ids = [p.id for p in result.proposed if p.row["entry"] == "shop.codec:add"]
    assert ids == ["add_associative", "add_identity", "add_kept"]


def test_a_refused_row_is_a_note_never_a_candidate(shop):
    result = survey_all(WorkTree(str(shop)), ["shop"], HeadRows(), ["other"])  # shop is not allowed
    assert result.proposed == ()
    assert result.notes[0].startswith("shop.codec:encode_ints: not proposed: encode_ints_round_trip: ")
    assert "outside the production packages policy allows (other)" in result.notes[0]


def test_a_module_that_does_not_parse_is_a_note(shop):
    (shop / "shop" / "broken.py").write_text("def f(:\n")
    result = survey_all(WorkTree(str(shop)), ["shop"], HeadRows(), ["shop"])
    assert [n for n in result.notes if "broken" in n][0].startswith("shop/broken.py: does not parse (")


def changed(shop: Path, name: str, status: str = "changed") -> Found:
    node = next(n for n in ast.parse(CODEC).body if isinstance(n, ast.FunctionDef) and n.name == name)
    return Found("shop/codec.py", "shop.codec", name, node.lineno, status, "", node)


def test_a_changed_function_gets_a_behaviour_kept_row_drawn_from_its_annotations(shop):
    items = [changed(shop, "add"), changed(shop, "describe"), changed(shop, "merge_money", "added")]
    found, notes = kept_rows(WorkTree(str(shop)), items, HeadRows(), ["shop"])
    assert [(p.id, p.row["kind"], sorted(p.row["generate"])) for p in found] == [
        ("add_kept", kinds.BACK_TO_BACK, ["a", "b", "count"])
    ]
    assert notes == ["shop.codec:describe: no behaviour-kept row: parameter `x`: no annotation"]


def test_a_function_with_defaults_also_gets_a_row_that_calls_it_with_them(tmp_path):
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "words.py").write_text(
        "def shout(text: str, times: int = 2) -> str:\n    return text * times\n"
    )
    (tmp_path / "oracles").mkdir()
    result = survey_all(WorkTree(str(tmp_path)), ["shop"], HeadRows(), ["shop"])
    rows = {p.id: p.row for p in result.proposed}
    assert set(rows) == {"shout_kept", "shout_kept_defaults"}
    assert set(rows["shout_kept"]["generate"]) == {"count", "text", "times"}
    assert set(rows["shout_kept_defaults"]["generate"]) == {"count", "text"}
    assert rows["shout_kept_defaults"]["kind"] == kinds.BACK_TO_BACK
