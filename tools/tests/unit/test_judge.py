"""Results that lie are failed samples: the judge compares plain JSON values it parsed itself."""

from __future__ import annotations

import pytest

from tools.testing.rowrun import BOUND, BOUND_BLOB, IDEM, IDEM_BLOB, TABLE, TABLE_BLOB, calc, run_rows


LIARS = {
    "eq_always_true": """
        class Yes:
            def __eq__(self, other): return True
            def __ne__(self, other): return False
            __hash__ = object.__hash__
        def add(a, b): return Yes()
    """,
    "int_subclass": """
        class Int(int):
            def __eq__(self, other): return True
            __hash__ = int.__hash__
        def add(a, b): return Int(0)
    """,
    "index_and_float": """
        class Num:
            def __index__(self): return 3
            def __float__(self): return 3.0
            def __int__(self): return 3
        def add(a, b): return Num()
    """,
    "str_subclass": """
        class S(str):
            pass
        def add(a, b): return S(str(a + b))
    """,
    "list_subclass": """
        class L(list):
            pass
        def add(a, b): return L([a + b])
    """,
    "dict_subclass": """
        class D(dict):
            pass
        def add(a, b): return D(x=a + b)
    """,
    "bool_for_int": """
        def add(a, b): return True
    """,
    "float_for_int": """
        def add(a, b): return float(a + b)
    """,
}


@pytest.mark.parametrize("liar", sorted(LIARS))
def test_a_lying_result_fails_exact_table(tmp_path, liar):
    result = run_rows(tmp_path, TABLE, TABLE_BLOB, calc(LIARS[liar]))
    judged = result.judged["add_table"]
    assert not judged.ok
    assert len(judged.reasons) == 2, judged.reasons


def test_an_honest_entry_passes_every_kind(tmp_path):
    body = """
        def add(a, b): return a + b
        def total(a, b): return a + b
        def norm(state, k): return {"n": state["n"], "k": k}
    """
    result = run_rows(tmp_path, TABLE + BOUND + IDEM, {**TABLE_BLOB, **BOUND_BLOB, **IDEM_BLOB}, calc(body))
    assert {i: j.ok for i, j in result.judged.items()} == {"add_table": True, "sum_in_range": True,
                                                            "norm_is_idempotent": True}


@pytest.mark.parametrize("body", [
    "class N:\n    def __le__(self, o): return True\n    def __ge__(self, o): return True\n"
    "def total(a, b): return N()\n",
    "class N(int):\n    pass\ndef total(a, b): return N(5)\n",
    "def total(a, b): return float('nan')\n",
    "def total(a, b): return True\n",
    "def total(a, b): return 10 ** 5000\n",
])
def test_a_lying_result_fails_bound(tmp_path, body):
    result = run_rows(tmp_path, BOUND, BOUND_BLOB, calc(body))
    assert not result.judged["sum_in_range"].ok, result.judged["sum_in_range"]


def test_a_state_mutated_after_it_is_returned_is_judged_as_returned(tmp_path):
    # Returns one shared dict and changes it on every call: each call's result is encoded when
    # it returns, so the judge sees the states differ.
    body = """
        SHARED = {"n": 0}
        def norm(state, k):
            SHARED["n"] += 1
            return SHARED
    """
    result = run_rows(tmp_path, IDEM, IDEM_BLOB, calc(body))
    judged = result.judged["norm_is_idempotent"]
    assert not judged.ok
    assert judged.reasons == ["sample 0: state after call 2 differs from the state after call 1"]


def test_an_input_mutated_in_place_does_not_leak_into_the_next_call(tmp_path):
    body = """
        def norm(state, k):
            state["n"] += 1  # mutates its argument, returns it
            return state
    """
    result = run_rows(tmp_path, IDEM, IDEM_BLOB, calc(body))
    assert not result.judged["norm_is_idempotent"].ok


def test_a_reason_with_characters_xml_does_not_allow_still_makes_readable_junit():
    # Production code's exception messages reach the reasons: control characters, ESC, a lone
    # surrogate. Written raw they would make test.xml unreadable (the gate would exit 1, not 4).
    import xml.etree.ElementTree as ET

    from tools.oracle_gate.actions.judge import to_junit
    from tools.oracle_gate.spec.judgement import Judgement

    reason = "sample 0: raised ValueError: a\x00b\x1b[0Kc\x0b\ud800 ##[add-mask]x"
    root = ET.fromstring(to_junit([Judgement("x", False, [reason], "d")], "salt", "suite"))
    failure = root.find("./testsuite/testcase/failure")
    assert failure is not None
    assert failure.get("message") == "sample 0: raised ValueError: a\\x00b\\x1b[0Kc\\x0b\\ud800 ##[add-mask]x"
    assert failure.text == failure.get("message")
