"""propose.py and the `propose` command: candidate rows for changed public production functions,
and the schema check of a model command's rows."""

from __future__ import annotations

import ast
import sys

import pytest

from tools.oracle_gate.authoring.propose import (
    HeadRows,
    Row,
    blob_path,
    explain,
    head_rows,
    model_rows,
    oracle_file_for,
    render,
    suggest_kind,
    survey,
)
from tools.oracle_gate.errors import GateError
from tools.oracle_gate.git.tree import GitTree
from tools.testing.gitrepo import oracle_toml

CALC = "def add(a, b):\n    return a + b\n\n\ndef norm(state, k):\n    return state\n"


def test_only_public_functions_that_were_added_or_whose_code_changed(project):
    base = project.git("rev-parse", "HEAD").strip()
    project.write(
        "shop/calc.py",
        "# a comment only changes nothing\n"
        + CALC.replace("return a + b", "return b + a")
        + "\n\ndef total_cents(lines) -> int:\n    return 0\n\n\ndef _private(x):\n    return x\n",
    )
    head = project.commit("change")
    result = survey(str(project.path), base, head, ["shop/calc.py"])  # no oracle rows given: add has none
    found = result.candidates
    assert [(c.entry, c.status, c.line) for c in found] == [
        ("shop.calc:add", "changed", 2),
        ("shop.calc:total_cents", "added", 10),
    ]
    assert [c.kind for c in found] == ["exact_table", "bound"]
    assert [(o.found.name, o.reason) for o in result.outcomes if o.candidate is None] == [
        ("_private", "private (leading underscore)")
    ]


@pytest.mark.parametrize(
    ("source", "kind"),
    [
        ("def apply_refund(ledger, refund_id):\n    return ledger\n", "idempotent"),
        ("def normalize_name(text):\n    return text\n", "idempotent"),
        ("def grand_total_cents(lines):\n    return 0\n", "bound"),
        ("def ratio(a, b) -> float:\n    return a / b\n", "bound"),
        ("def label_for(code):\n    return str(code)\n", "exact_table"),
    ],
)
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


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("/nonexistent/model", "could not run"),
        (f"{sys.executable} -c 'import sys; sys.exit(3)'", "exited 3"),
        (f"{sys.executable} -c 'print(\"not = toml = here\")'", "did not answer with TOML"),
    ],
)
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
    assert "# goes in oracles/shop.toml: it holds the rows of shop.calc" in out
    assert '# blob = "oracles/blobs/shop/dedupe_is_idempotent.json"  # samples for dedupe(items)' in out
    assert "#   shop.calc:dedupe (added at shop/calc.py:9): candidate dedupe_is_idempotent below" in out
    assert "helper_in_harness" not in out
    assert project.git("status", "--porcelain") == ""


def _survey(project, source, path="shop/calc.py"):
    """Commits `source` at `path` on the change branch; the survey of that file with HEAD's rows."""
    base = project.git("rev-parse", "HEAD").strip()
    project.write(path, source)
    head = project.commit("change")
    return survey(str(project.path), base, head, [path], head_rows(GitTree(str(project.path), head)))


METHODS = """\
import sys


class Version:
    def bump_major(self):
        return Version()

    class Part:
        def grow(self):
            return 1


def outer(x):
    def inner(y):
        return y
    return inner(x)


if sys.version_info >= (3, 11):
    def fast(x):
        return x


def norm(state, k):
    return state
"""


def test_each_changed_function_without_a_candidate_says_why(project):
    result = _survey(project, METHODS)
    reasons = {o.found.entry: o.reason for o in result.outcomes}
    assert reasons == {
        "shop.calc:Version.bump_major": "",
        "shop.calc:Version.Part.grow": (
            "a method of class Version.Part: rows can name module-level functions and "
            "methods of module-level classes only"
        ),
        "shop.calc:outer": "",
        "shop.calc:outer.<locals>.inner": (
            "nested in function outer: rows can name module-level functions and methods of module-level classes only"
        ),
        "shop.calc:fast": (
            "defined inside a module-level `if` block, not as a top-level statement: propose proposes "
            "top-level defs only (write its row by hand if the module always defines it)"
        ),
        "shop.calc:add": "removed at HEAD: nothing to propose; rows still name it: sum_in_range, add_table in "
        "oracles/shop.toml",
    }  # norm is unchanged: not listed
    assert [o.found.status for o in result.outcomes][-1] == "removed"
    lines = explain(result, ["shop"])
    assert lines[0] == (
        "# 6 function(s) or method(s) added, changed or removed in the production diff; 2 with a candidate row:"
    )
    assert (
        "#   shop.calc:Version.bump_major (added at shop/calc.py:5): candidate version_bump_major_table below" in lines
    )
    assert "#   shop.calc:outer (added at shop/calc.py:13): candidate outer_table below" in lines
    assert (
        "#   shop.calc:add (removed from shop/calc.py, line 1 at the merge base): no candidate: removed at HEAD: "
        "nothing to propose; rows still name it: sum_in_range, add_table in oracles/shop.toml" in lines
    )


def test_a_changed_function_with_a_row_at_head_is_skipped_even_an_unpinned_one(project):
    rows = oracle_toml(
        [
            {
                "id": "norm_draft",
                "entry": "shop.calc:norm",
                "kind": "exact_table",
                "blob": "oracles/blobs/extra/norm.json",
            }
        ]
    )  # written from a proposal, not pinned yet
    project.write("oracles/extra.toml", rows)
    result = _survey(
        project,
        CALC.replace("return a + b", "return b + a").replace("return state", "return dict(state)")
        + "\n\ndef sum_all(a, b):\n    return a\n",
    )
    reasons = {o.found.name: o.reason for o in result.outcomes}
    assert reasons == {
        "add": "already has a row: sum_in_range, add_table in oracles/shop.toml",
        "norm": "already has a row: norm_draft in oracles/extra.toml; norm_is_idempotent in oracles/shop.toml",
        "sum_all": "",
    }
    (candidate,) = result.candidates
    assert candidate.id == "sum_all_in_range"


def test_a_suggested_id_never_repeats_one_at_head_or_another_candidates(project):
    result = _survey(project, CALC + "\n\ndef sum(a, b):\n    return a\n\n\ndef sum_(a):\n    return a\n")
    assert [c.id for c in result.candidates] == ["sum_in_range_2", "sum__in_range"]
    taken = {"x_table"} | {f"x_table_{n}" for n in range(2, 5)}
    rows = HeadRows(tuple(Row(i, "shop.calc:other", "oracles/shop.toml") for i in taken), ("oracles/shop.toml",))
    assert _survey_rows(project, rows) == ["x_table_5"]


def _survey_rows(project, rows):
    base = project.git("rev-parse", "HEAD").strip()
    project.write("shop/calc.py", CALC + "\n\ndef x(a):\n    return str(a)\n")
    head = project.commit("x")
    return [c.id for c in survey(str(project.path), base, head, ["shop/calc.py"], rows).candidates]


@pytest.mark.parametrize(
    ("path", "source", "reason"),
    [
        ("shop/__init__.py", "def version():\n    return 1\n", ""),  # proposed as shop.__init__:version
        ("shop/sub/__init__.py", "def version():\n    return 1\n", ""),
    ],
)
def test_a_function_the_schema_would_refuse_as_an_entry_gets_no_candidate(project, path, source, reason):
    (outcome,) = _survey(project, source, path).outcomes
    assert outcome.reason == reason


@pytest.mark.parametrize(
    ("source", "note"),
    [
        (
            CALC + "\n# a comment\nLIMIT = 3\n",
            "shop/calc.py: no function's or method's code changed (only module-level code, comments or formatting)",
        ),
        ("def add(:\n", "shop/calc.py: does not parse at HEAD (line 1: invalid syntax); no function read"),
    ],
)
def test_a_changed_file_that_yields_no_function_says_why(project, source, note):
    result = _survey(project, source)
    assert result.outcomes == () and result.notes == (note,)
    assert explain(result, ["shop"]) == [f"# {note}"]


def test_a_candidates_blob_goes_in_the_folder_of_the_oracle_file_it_is_suggested_for(project):
    result = _survey(project, CALC + "\n\ndef label(code):\n    return str(code)\n")
    (candidate,) = result.candidates
    assert (candidate.oracle_file, candidate.placement) == ("oracles/shop.toml", "it holds the rows of shop.calc")
    assert candidate.blob == "oracles/blobs/shop/label_table.json"


def test_the_oracle_file_holds_rows_of_the_module_else_of_the_package_else_is_the_packages_own():
    rows = HeadRows(
        (
            Row("a", "shop.calc:add", "oracles/calc.toml"),
            Row("b", "shop.tax:rate", "oracles/tax.toml"),
            Row("c", "shop.tax:due", "oracles/tax.toml"),
            Row("d", "shop.calc:sub", "oracles/misc.toml"),
        ),
        ("oracles/calc.toml", "oracles/misc.toml", "oracles/pay.toml", "oracles/tax.toml"),
    )
    assert oracle_file_for("shop.calc", rows) == ("oracles/calc.toml", "it holds the rows of shop.calc")
    assert oracle_file_for("shop.new", rows) == ("oracles/tax.toml", "it holds rows of package shop")
    assert oracle_file_for("pay.card", rows) == ("oracles/pay.toml", "package pay's own oracle file")
    assert oracle_file_for("bank.card", rows) == (
        "oracles/bank.toml",
        "a new oracle file for package bank: start it with `schema = 1`",
    )
    assert oracle_file_for("policy.rules", rows)[0] == "oracles/policy_rows.toml"
    assert blob_path("oracles/tax.toml", "due_in_range") == "oracles/blobs/tax/due_in_range.json"


def test_head_rows_reads_rows_as_written_and_notes_unreadable_files(project):
    project.write("oracles/broken.toml", "not toml = = \n")
    project.commit("broken")
    oracles = head_rows(GitTree(str(project.path), "HEAD"))
    assert [(r.id, r.entry, r.source) for r in oracles.rows] == [
        ("sum_in_range", "shop.calc:add", "oracles/shop.toml"),
        ("norm_is_idempotent", "shop.calc:norm", "oracles/shop.toml"),
        ("add_table", "shop.calc:add", "oracles/shop.toml"),
    ]
    assert oracles.files == ("oracles/broken.toml", "oracles/shop.toml")
    (note,) = oracles.notes
    assert note.startswith("oracles/broken.toml is not readable TOML (")


def test_the_command_explains_an_empty_answer(project, gate):
    project.write("shop/version.py", "class Version:\n    def _bump(self):\n        return Version()\n")
    project.write("harness/helpers.py", "def build(x):\n    return x\n")
    project.commit("change")
    code, out, err = gate("--repo", str(project.path), "propose", "--base", "main")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("# propose: 0 candidate row(s) for 1 changed production file(s) (merge base ")
    assert lines[1:4] == [
        "# 1 function(s) or method(s) added, changed or removed in the production diff; 0 with a candidate row:",
        "#   shop.version:Version._bump (added at shop/version.py:2): no candidate: private (leading underscore)",
        "# harness/helpers.py: not in a production package of oracles/policy.toml (shop); not read",
    ]
    assert lines[4:] == [""]


def test_the_command_says_when_no_production_file_changed(project, gate):
    project.write("harness/helpers.py", "def build(x):\n    return x\n")
    project.commit("change")
    code, out, _ = gate("--repo", str(project.path), "propose", "--base", "main")
    assert code == 0
    assert out.splitlines()[1:3] == [
        "# no .py file of the production packages of oracles/policy.toml (shop) changed",
        "# harness/helpers.py: not in a production package of oracles/policy.toml (shop); not read",
    ]


def test_a_changed_method_gets_a_candidate_with_its_class_as_receiver(project, gate):
    project.write(
        "shop/version.py",
        "class Version:\n    def __init__(self, major):\n        self.major = major\n\n"
        "    def bump(self, by):\n        return self.major + by\n\n    @staticmethod\n"
        "    def parse(text):\n        return Version(int(text))\n",
    )
    project.commit("change")
    code, out, err = gate("--repo", str(project.path), "propose", "--base", "main")
    assert code == 0, err
    assert '# entry = "shop.version:Version.bump"' in out
    assert '# receiver = "shop.version:Version"  # builds the object' in out
    assert '# entry = "shop.version:Version"' in out  # the constructor, for the changed __init__
    assert '# entry = "shop.version:Version.parse"' in out
    assert out.count("# receiver = ") == 1  # none for the constructor and the staticmethod


@pytest.mark.parametrize(
    ("init", "project_line"),
    [
        (
            "    def __init__(self, table, region='x'):\n        self.table = "
            "dict(table)\n        self.region: str = region\n"
            "        self._cache = {}\n",
            '{ attrs = ["region", "table"] }',
        ),
        ("    def __init__(self, n):\n        pass\n", '"str"'),
    ],
)
def test_a_constructor_gets_a_projection_of_what_init_sets_and_a_method_a_receiver(project, init, project_line):
    source = CALC + "\n\nclass Rates:\n" + init + "\n    def lookup(self, region):\n        return region\n"
    found = {c.entry: c for c in _survey(project, source).candidates}
    assert found["shop.calc:Rates"].project == project_line and found["shop.calc:Rates"].receiver == ""
    assert (
        found["shop.calc:Rates.lookup"].receiver == "shop.calc:Rates" and found["shop.calc:Rates.lookup"].project == ""
    )
    assert f"# project = {project_line}  # the object is not plain JSON" in "\n".join(render(found["shop.calc:Rates"]))
