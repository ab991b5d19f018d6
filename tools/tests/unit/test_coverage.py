"""Unit tests of coverage.py: the production functions a change modified (functions, methods, nested
functions, removed ones) and which of them no row's coverage record names (docs/design.md section 12)."""

from __future__ import annotations

import pytest

from tools.oracle_gate.approval.policy import Policy
from tools.oracle_gate.check.coverage import (
    NOT_MEASURED_NO_RECORD,
    NOT_MEASURED_RESULTS,
    changed_functions,
    function_name,
    measure,
    production_paths,
    uncovered_setting,
)
from tools.oracle_gate.git.functions import Found, module_name
from tools.oracle_gate.runs.results import Observed

BASE = """\
def discount(cents):
    return cents // 10


class Cart:
    def total(self, lines):
        return sum(lines)

    def count(self, lines):
        return len(lines)


def outer(x):
    def inner(y):
        return y + 1
    return inner(x)


def gone():
    return 0
"""

CHANGED = """\
def discount(cents):
    # a comment and a blank line change no code

    return cents // 10


class Cart:
    def total(self, lines):
        return sum(lines) + 1

    def count(self, lines):
        return len(lines)


def outer(x):
    def inner(y):
        return y + 2
    return inner(x)


def fresh():
    return 1
"""


def base_and_change(project, base_files, changed_files):
    """(merge base, HEAD) of a change that turns `base_files` (committed on main) into `changed_files`."""
    project.git("checkout", "-q", "main")
    for rel, text in base_files.items():
        project.write(rel, text)
    base = project.commit("base code")
    project.git("checkout", "-q", "-B", "change")
    for rel, text in changed_files.items():
        if text is None:
            (project.path / rel).unlink()
        else:
            project.write(rel, text)
    return base, project.commit("change")


def summary(found):
    return [(function_name(f), f.status) for f in found]


def test_functions_methods_nested_functions_and_a_removed_one(project):
    base, head = base_and_change(project, {"shop/prices.py": BASE}, {"shop/prices.py": CHANGED})
    found = changed_functions(str(project.path), base, head, ["shop/prices.py"], ["shop"])
    # A nested function's change is a change of the function it is written in too (its body lines
    # changed); the comment-only edit of `discount` and the untouched method are no change.
    assert summary(found) == [
        ("shop.prices:Cart.total", "changed"),
        ("shop.prices:outer", "changed"),
        ("shop.prices:outer.<locals>.inner", "changed"),
        ("shop.prices:fresh", "added"),
        ("shop.prices:gone", "removed"),
    ]
    assert [f.line for f in found] == [8, 15, 16, 21, 19]


def test_a_new_file_adds_and_a_deleted_file_removes_every_function(project):
    base, head = base_and_change(
        project,
        {"shop/old.py": "def a():\n    return 1\n"},
        {"shop/old.py": None, "shop/new.py": "class K:\n    def m(self):\n        return 2\n"},
    )
    found = changed_functions(str(project.path), base, head, ["shop/new.py", "shop/old.py"], ["shop"])
    assert summary(found) == [("shop.new:K.m", "added"), ("shop.old:a", "removed")]


def test_only_python_files_of_the_production_packages_are_read(project):
    base, head = base_and_change(
        project,
        {},
        {
            "harness/test_x.py": "def f():\n    return 1\n",
            "tools/x.py": "def f():\n    return 1\n",
            "shop/notes.txt": "def f(): pass\n",
            "shop/__init__.py": "def version():\n    return 2\n",
        },
    )
    paths = ["harness/test_x.py", "tools/x.py", "shop/notes.txt", "shop/__init__.py"]
    assert production_paths(paths, ["shop"]) == ["shop/__init__.py"]
    # A package's own module is named as Python names it when imported (the record's names).
    assert (module_name("shop/__init__.py"), module_name("shop/sub/__init__.py")) == ("shop", "shop.sub")
    assert summary(changed_functions(str(project.path), base, head, paths, ["shop"])) == [("shop:version", "added")]
    assert changed_functions(str(project.path), base, head, paths, []) == []


def fn(entry, status="changed", line=1):
    module, _, name = entry.partition(":")
    return Found(module.replace(".", "/") + ".py", module, name, line, status, "", None)


CHANGES = [
    fn("shop.prices:discount", line=3),
    fn("shop.cart:Cart.total", line=9),
    fn("shop.cart:Cart.total", line=14),
    fn("shop.prices:fresh", "added", 20),
    fn("shop.prices:gone", "removed", 30),
]


def test_the_functions_no_record_names_are_noted_and_removed_ones_never_count():
    observed = {"a": Observed("passed", ran=("shop.prices:fresh", "shop.util:other")), "b": Observed("failed", ran=())}
    found = measure(CHANGES, observed, setting="note")
    # A property's getter and setter share one `module:qualname`: one function.
    assert [function_name(f) for f in found.modified] == [
        "shop.prices:discount",
        "shop.cart:Cart.total",
        "shop.prices:fresh",
    ]
    assert [function_name(f) for f in found.removed] == ["shop.prices:gone"]
    assert [function_name(f) for f in found.uncovered] == ["shop.prices:discount", "shop.cart:Cart.total"]
    assert found.notes() == [
        "coverage: the change modified 2 production function(s) no invariant ran: "
        "shop.prices:discount, shop.cart:Cart.total"
    ]
    assert found.violations() == []
    assert found.detail() == "3 modified production function(s), 1 run by an invariant (uncovered_changes = 'note')"


def test_with_the_fail_setting_each_uncovered_function_is_an_exit_4_violation():
    found = measure(CHANGES, {"a": Observed("passed", ran=("shop.prices:fresh",))}, setting="fail")
    assert [v.line() for v in found.violations()] == [
        "[4] shop/prices.py: shop.prices:discount (changed at line 3) was modified by the change and no invariant ran "
        'it; the policy says uncovered_changes = "fail": add or extend a row '
        "whose entry reaches it (a labelled change)",
        "[4] shop/cart.py: shop.cart:Cart.total (changed at line 9) was modified by the change and no invariant ran "
        'it; the policy says uncovered_changes = "fail": add or extend a row '
        "whose entry reaches it (a labelled change)",
    ]
    covered = measure(
        CHANGES,
        {"a": Observed("passed", ran=("shop.prices:fresh", "shop.prices:discount", "shop.cart:Cart.total"))},
        setting="fail",
    )
    assert (covered.violations(), covered.notes()) == ([], [])


def test_a_coverage_that_was_not_measured_is_said_so_and_never_fails():
    from_files = measure(CHANGES, {"a": Observed("passed", ran=())}, setting="fail", why=NOT_MEASURED_RESULTS)
    assert not from_files.measured and from_files.violations() == []
    assert from_files.notes() == [
        "coverage: not measured (the outcomes come from result files (--results), not from a run of the gate); the "
        "change modified 3 production function(s): shop.prices:discount, shop.cart:Cart.total, shop.prices:fresh"
    ]
    assert from_files.detail() == "3 modified production function(s), coverage not measured"
    unrecorded = measure(CHANGES, {"a": Observed("passed"), "b": Observed("failed")}, setting="fail")
    assert unrecorded.why == NOT_MEASURED_NO_RECORD and unrecorded.violations() == []
    assert measure(CHANGES, {}, setting="note").why == NOT_MEASURED_NO_RECORD


def test_a_row_that_passed_without_a_record_counts_as_running_nothing():
    observed = {"a": Observed("passed", ran=("shop.prices:fresh",)), "b": Observed("passed"), "c": Observed("failed")}
    found = measure(CHANGES, observed, setting="fail")
    assert found.measured and found.unrecorded == ("b",) and len(found.violations()) == 2
    assert found.notes()[1] == "coverage: 1 row(s) passed without a coverage record, counted as running nothing: b"


def test_the_json_names_every_modified_function_and_whether_it_ran():
    found = measure(CHANGES[:1] + CHANGES[3:], {"a": Observed("passed", ran=("shop.prices:fresh",))}, setting="note")
    assert found.to_json() == {
        "setting": "note",
        "measured": True,
        "why": "",
        "modified": [
            {"name": "shop.prices:discount", "path": "shop/prices.py", "line": 3, "status": "changed", "ran": False},
            {"name": "shop.prices:fresh", "path": "shop/prices.py", "line": 20, "status": "added", "ran": True},
        ],
        "removed": ["shop.prices:gone"],
        "uncovered": ["shop.prices:discount"],
        "unrecorded": [],
    }
    assert measure(CHANGES[:1], {}, setting="note").to_json()["modified"][0]["ran"] is None


def test_many_functions_are_named_up_to_ten():
    many = [fn(f"shop.m:f{i}") for i in range(12)]
    note = measure(many, {"a": Observed("passed", ran=())}, setting="note").notes()[0]
    assert note.endswith("shop.m:f8, shop.m:f9 and 2 more")


@pytest.mark.parametrize(
    "settings, expected",
    [
        ((), "note"),
        (("note",), "note"),
        (("note", "fail"), "fail"),
        (("fail", "note"), "fail"),
        ((None, "note"), "note"),
    ],
)
def test_the_stricter_setting_of_the_policies_in_force_and_judged_applies(settings, expected):
    policies = [None if s is None else Policy("l", (), ("shop",), s) for s in settings]
    assert uncovered_setting(policies) == expected
