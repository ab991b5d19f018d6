"""propose.py and the `propose` command: candidate rows for changed public production functions,
and the schema check of a model command's rows."""

from __future__ import annotations

import ast
import sys

import pytest

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.authoring.propose import candidates, model_rows, suggest_kind

CALC = "def add(a, b):\n    return a + b\n\n\ndef norm(state, k):\n    return state\n"


def test_only_public_functions_that_were_added_or_whose_code_changed(project):
    base = project.git("rev-parse", "HEAD").strip()
    project.write("shop/calc.py", "# a comment only changes nothing\n" + CALC.replace("return a + b", "return b + a")
                  + "\n\ndef total_cents(lines) -> int:\n    return 0\n\n\ndef _private(x):\n    return x\n")
    head = project.commit("change")
    found = candidates(str(project.path), base, head, ["shop/calc.py"])
    assert [(c.entry, c.status, c.line) for c in found] == [("shop.calc:add", "changed", 2),
                                                            ("shop.calc:total_cents", "added", 10)]
    assert [c.kind for c in found] == ["exact_table", "bound"]


@pytest.mark.parametrize(("source", "kind"), [
    ("def apply_refund(ledger, refund_id):\n    return ledger\n", "idempotent"),
    ("def normalize_name(text):\n    return text\n", "idempotent"),
    ("def grand_total_cents(lines):\n    return 0\n", "bound"),
    ("def ratio(a, b) -> float:\n    return a / b\n", "bound"),
    ("def label_for(code):\n    return str(code)\n", "exact_table"),
])
def test_the_suggested_kind_comes_with_a_reason(source, kind):
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef)
    suggested, reason = suggest_kind(node)
    assert suggested == kind and reason


MODEL = '''
import sys
sys.stdin.read()
print("""
[[invariant]]
id = "add_in_range"
entry = "shop.calc:add"
kind = "bound"
min = 0
max = 10
blob = "oracles/blobs/add.json"

[[invariant]]
id = "add_guess"
entry = "shop.calc:add"
kind = "fuzzy"
blob = "oracles/blobs/add.json"

[[invariant]]
id = "add_pinned"
entry = "shop.calc:add"
kind = "exact_table"
blob = "oracles/blobs/add.json"
blob_sha256 = "{pin}"

[[invariant]]
id = "os_table"
entry = "os.path:join"
kind = "exact_table"
blob = "oracles/blobs/os.json"
""".format(pin="a" * 64))
'''


def test_a_model_commands_rows_are_accepted_only_when_they_pass_the_schema_without_a_pin(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(MODEL)
    accepted, rejected = model_rows(f"{sys.executable} {script}", "diff --git a/shop/calc.py ...", ["shop"])
    assert accepted[0] == "# [[invariant]]  # from --model-command; needs a blob and `pin --write`"
    assert '# id = "add_in_range"' in accepted and not any("add_guess" in line for line in accepted)
    assert [r.split(":")[0] for r in rejected] == ["add_guess", "add_pinned", "os_table"]
    assert "is not one of bound, idempotent, exact_table" in rejected[0]
    assert "never invents a pin" in rejected[1]


@pytest.mark.parametrize(("command", "message"), [
    ("/nonexistent/model", "could not run"),
    (f"{sys.executable} -c 'import sys; sys.exit(3)'", "exited 3"),
    (f"{sys.executable} -c 'print(\"not = toml = here\")'", "did not answer with TOML"),
])
def test_a_failing_model_command_is_exit_1(command, message):
    with pytest.raises(GateError, match=message) as raised:
        model_rows(command, "", ["shop"])
    assert raised.value.code == 1


def test_the_command_reads_production_only_and_writes_nothing(project, gate, tmp_path):
    project.write("shop/calc.py", CALC + "\n\ndef dedupe(items):\n    return sorted(set(items))\n")
    project.write("harness/test_shop.py", "def helper_in_harness():\n    return 1\n")
    project.commit("change")
    code, out, err = gate("--repo", str(project.path), "propose", "--base", "main")
    assert code == 0, err
    assert "# shop.calc:dedupe (added at shop/calc.py:9)" in out and 'kind = "idempotent"' in out
    assert "helper_in_harness" not in out
    assert project.git("status", "--porcelain") == ""
