"""Unit tests of errors.py: GateError text, subclass codes, Violation lines, error_line and the exit-code table."""

from __future__ import annotations

import pytest

from tools.oracle_gate import errors
from tools.oracle_gate.errors import (
    EXIT_CODES,
    PREFIX,
    GateError,
    GitError,
    OracleError,
    UsageError,
    Violation,
    error_line,
    exit_codes_help,
)


def test_exit_code_values():
    assert (
        errors.OK,
        errors.UNDECIDED,
        errors.PROTECTED_PATH,
        errors.MISSING_ID,
        errors.NO_OUTCOME,
        errors.INVALID_ORACLE,
        errors.RUNS_DISAGREE,
    ) == (0, 1, 2, 3, 4, 5, 6)
    assert list(EXIT_CODES) == [0, 1, 2, 3, 4, 5, 6]
    assert EXIT_CODES[0] == "gate ok"
    assert EXIT_CODES[5] == (
        "an oracle file, blob, policy or manifest is invalid; a labelled change weakens a claim "
        "without a line in oracles/CHANGELOG.md naming its id"
    )


@pytest.mark.parametrize("cls, code", [(GateError, 1), (UsageError, 1), (GitError, 1), (OracleError, 5)])
def test_codes_of_each_class(cls, code):
    assert cls.code == code
    assert cls("x").code == code
    assert issubclass(cls, GateError) and issubclass(cls, Exception)


@pytest.mark.parametrize(
    "kwargs, text",
    [
        ({}, "bad"),
        ({"path": "oracles/shop.toml"}, "oracles/shop.toml: bad"),
        ({"row": "add_table"}, "row add_table: bad"),
        ({"field": "min"}, "field min: bad"),
        ({"fix": "re-pin it"}, "bad; re-pin it"),
        (
            {"path": "oracles/shop.toml", "row": "add_table", "field": "min", "fix": "re-pin it"},
            "oracles/shop.toml: row add_table: field min: bad; re-pin it",
        ),
        ({"path": "", "row": "", "field": "", "fix": ""}, "bad"),
    ],
)
def test_gate_error_text(kwargs, text):
    error = OracleError("bad", **kwargs)
    assert str(error) == text
    assert error.message == "bad"
    assert error.args == ("bad",)


def test_gate_error_keeps_its_fields():
    error = GitError("m", path="p", row="r", field="f", fix="x")
    assert (error.path, error.row, error.field, error.fix, error.code) == ("p", "r", "f", "x", 1)
    none = GateError("m")
    assert (none.path, none.row, none.field, none.fix) == (None, None, None, None)


def test_gate_error_text_escapes_control_characters():
    error = OracleError("is\nbad\x1b[2J", path="oracles/a\rb.toml", row="r\u202e", field="f\t", fix="ok\x7f")
    assert str(error) == "oracles/a\\rb.toml: row r\\u202e: field f\\t: is\\nbad\\x1b[2J; ok\\x7f"
    assert "\n" not in str(GateError("a\u2028b\x85c")) and str(GateError("a\u2028b")) == "a\\u2028b"


@pytest.mark.parametrize(
    "violation, line",
    [
        (
            Violation(2, "oracles/shop.toml", "", "changed without the label"),
            "[2] oracles/shop.toml: changed without the label",
        ),
        (Violation(3, "oracles/shop.toml", "add_table", "is missing"), "[3] oracles/shop.toml add_table: is missing"),
        (Violation(4, "", "add_table", "failed"), "[4] add_table: failed"),
        (Violation(6, "", "", "the runs disagree"), "[6]: the runs disagree"),
    ],
)
def test_violation_line(violation, line):
    assert violation.line() == line


def test_violation_line_escapes_every_part():
    line = Violation(5, "oracles/x\n[0] gate ok.toml", "id\x1b", "bad\r\nok").line()
    assert line == "[5] oracles/x\\n[0] gate ok.toml id\\x1b: bad\\r\\nok"
    assert "\n" not in line and "\r" not in line


def test_violation_from_error_keeps_code_path_row_field_and_fix():
    error = OracleError("must be 1", path="oracles/shop.toml", row="add_table", field="schema", fix="set it")
    violation = Violation.from_error(error)
    assert violation == Violation(5, "oracles/shop.toml", "add_table", "field schema: must be 1; set it")
    assert violation.line() == "[5] oracles/shop.toml add_table: field schema: must be 1; set it"


def test_violation_from_a_bare_error():
    assert Violation.from_error(GitError("no base")) == Violation(1, "", "", "no base")


def test_violation_from_error_escapes_only_when_printed():
    violation = Violation.from_error(UsageError("a\nb", path="p\x1b"))
    assert violation.message == "a\nb" and violation.path == "p\x1b"
    assert violation.line() == "[1] p\\x1b: a\\nb"


def test_violation_is_frozen():
    violation = Violation(4, "", "x", "m")
    with pytest.raises(AttributeError):
        violation.code = 0  # type: ignore[misc]


def test_error_line():
    assert PREFIX == "oracle-gate:"
    assert error_line(5, "oracles/shop.toml: bad") == "oracle-gate: [5] oracles/shop.toml: bad"
    assert error_line(1, "x\ngate ok (exit 0)\x1b") == "oracle-gate: [1] x\\ngate ok (exit 0)\\x1b"


def test_exit_codes_help_lists_every_code_in_order_within_79_columns():
    text = exit_codes_help()
    lines = text.split("\n")
    assert lines[0] == "exit codes (the lowest that applies; docs/design.md section 6):"
    assert lines[1] == "  0  gate ok"
    assert lines[2:5] == [
        "  1  the gate could not decide: bad usage, not a git repository, unknown base,",
        "     unreadable results, Bazel error, a run that could not be set up (an",
        "     external repository, a toolchain, Bazel itself)",
    ]
    assert all(len(line) <= 79 for line in lines)
    starts = [line[:5] for line in lines[1:] if not line.startswith("     ")]
    assert starts == [f"  {code}  " for code in range(7)]
    for code, meaning in EXIT_CODES.items():
        assert " ".join(meaning.split()) in " ".join(text.split()), code
