"""Methods, constructors, built arguments and projections, run by the real caller and judged strictly."""

from __future__ import annotations

import pytest

from tools.testing.rowrun import run_rows

VERSION = """
class Version:
    made = 0

    def __init__(self, major, minor=0, patch=0):
        self.major, self.minor, self.patch = major, minor, patch

    @classmethod
    def parse(cls, text):
        major, minor, patch = (int(part) for part in text.split("."))
        return cls(major, minor, patch)

    def to_tuple(self):
        return (self.major, self.minor, self.patch)

    def compare(self, other):
        if isinstance(other, str):
            other = Version.parse(other)
        a, b = self.to_tuple(){SLICE}, other.to_tuple(){SLICE}
        return (a > b) - (a < b)

    def __str__(self):
        return f"{self.major}.{self.minor}.{self.patch}"

    def bump(self):
        return Version(self.major, self.minor, self.patch + 1)
"""


def semver(slice_: str = "[:3]", extra: str = "") -> dict[str, str]:
    return {"shop/__init__.py": "", "shop/version.py": VERSION.replace("{SLICE}", slice_) + extra}


def table(entry, samples, **fields):
    row = {"id": "row", "entry": entry, "kind": "exact_table", "blob": "oracles/blobs/t.json", **fields}
    return [row], {"oracles/blobs/t.json": samples}


def outcome(tmp_path, rows, blobs, modules, **kwargs):
    return run_rows(tmp_path, rows, blobs, modules, **kwargs).judged["row"]


COMPARE_SAMPLES = [
    {"receiver": ["1.2.3"], "args": ["1.2.4"], "expected": -1},
    {"receiver": ["1.2.3"], "args": ["1.2.3"], "expected": 0},
    {"receiver": {"major": 2}, "args": ["1.9.9"], "expected": 1},
]


def test_a_method_is_called_on_a_receiver_built_from_each_sample(tmp_path):
    samples = [dict(s) for s in COMPARE_SAMPLES]
    samples[2]["receiver"] = ["2.0.0"]
    rows, blobs = table("shop.version:Version.compare", samples, receiver="shop.version:Version.parse")
    assert outcome(tmp_path / "right", rows, blobs, semver()).ok
    wrong = outcome(tmp_path / "wrong", rows, blobs, semver("[:2]"))
    assert not wrong.ok and wrong.reasons == ["sample 0 (0-based): result 0 != expected -1"]


def test_an_object_receiver_calls_the_constructor_with_keywords(tmp_path):
    samples = [
        {"receiver": {"major": 2}, "args": ["1.9.9"], "expected": 1},
        {"receiver": {"major": 1, "minor": 2, "patch": 3}, "args": ["1.2.3"], "expected": 0},
    ]
    rows, blobs = table("shop.version:Version.compare", samples, receiver="shop.version:Version")
    assert outcome(tmp_path, rows, blobs, semver()).ok


def test_a_constructor_entry_with_a_projection_of_attributes(tmp_path):
    rows, blobs = table(
        "shop.version:Version",
        [{"args": [1, 2], "expected": {"major": 1, "minor": 2, "patch": 0}}],
        project={"attrs": ["major", "minor", "patch"]},
    )
    assert outcome(tmp_path, rows, blobs, semver()).ok


def test_a_method_without_receiver_takes_the_instance_first_built_by_args_names(tmp_path):
    rows, blobs = table(
        "shop.version:Version.compare",
        [{"args": ["1.2.3", "1.3.0"], "expected": -1}],
        args_names=["self", "other"],
        build={"self": "shop.version:Version.parse", "other": "shop.version:Version.parse"},
    )
    assert outcome(tmp_path, rows, blobs, semver()).ok


@pytest.mark.parametrize(
    ("project", "expected"),
    [
        ("str", "1.2.3"),
        ({"call": "to_tuple"}, [1, 2, 3]),
        ("list", [1, 2, 3]),
        ("len", 3),
        ({"attrs": ["patch"]}, {"patch": 3}),
    ],
)
def test_projections_give_plain_json(tmp_path, project, expected):
    entry = "shop.version:Version.to_tuple" if project in ("list", "len") else "shop.version:Version.parse"
    rows, blobs = table(
        entry, [{"args": ["1.2.3"] if entry.endswith("parse") else [], "expected": expected}], project=project
    )
    if entry.endswith("to_tuple"):
        rows[0]["receiver"] = "shop.version:Version.parse"
        blobs["oracles/blobs/t.json"][0]["receiver"] = ["1.2.3"]
    judged = outcome(tmp_path, rows, blobs, semver())
    assert judged.ok, judged.reasons


def test_without_a_projection_an_object_fails_the_sample(tmp_path):
    rows, blobs = table("shop.version:Version.parse", [{"args": ["1.2.3"], "expected": "1.2.3"}])
    judged = outcome(tmp_path, rows, blobs, semver())
    assert not judged.ok and "shop.version.Version, not a plain JSON-typed value" in judged.reasons[0]


LIARS = """
class Sly(str):
    def __eq__(self, other):
        return True
    __hash__ = str.__hash__

class Lying:
    def __init__(self, text):
        self.text = text
    def __str__(self):
        return Sly(self.text)
    @property
    def major(self):
        return Sly("1")
    def __eq__(self, other):
        return True

def make(text):
    return Lying(text)

class Counter:
    calls = 0
    def __init__(self):
        Counter.calls += 1
    def value(self):
        return Counter.calls
"""


@pytest.mark.parametrize("project", ["str", {"attrs": ["major"]}, None])
def test_lying_results_and_properties_are_judged_strictly(tmp_path, project):
    fields = {"project": project} if project is not None else {}
    rows, blobs = table(
        "shop.liar:make", [{"args": ["1"], "expected": "1" if project == "str" else {"major": "1"}}], **fields
    )
    judged = outcome(tmp_path, rows, blobs, {"shop/__init__.py": "", "shop/liar.py": LIARS})
    assert not judged.ok
    assert "not a plain JSON-typed value" in judged.reasons[0], judged.reasons


def test_a_receiver_that_shares_state_between_samples_is_judged_as_its_results(tmp_path):
    rows, blobs = table(
        "shop.liar:Counter.value", [{"receiver": [], "args": [], "expected": 1}] * 2, receiver="shop.liar:Counter"
    )
    judged = outcome(tmp_path, rows, blobs, {"shop/__init__.py": "", "shop/liar.py": LIARS})
    assert not judged.ok and judged.reasons == ["sample 1 (0-based): result 2 != expected 1"]


def test_a_keyword_row_builds_a_named_argument(tmp_path):
    rows = [
        {
            "id": "row",
            "entry": "shop.version:Version.compare",
            "kind": "bound",
            "min": 0,
            "max": 0,
            "receiver": "shop.version:Version",
            "build": {"other": "shop.version:Version"},
            "blob": "oracles/blobs/b.json",
        }
    ]
    blobs = {"oracles/blobs/b.json": [{"receiver": [1, 2, 3], "other": {"major": 1, "minor": 2, "patch": 3}}]}
    assert outcome(tmp_path, rows, blobs, semver()).ok


def test_a_generated_receiver_catches_an_off_by_one_slice(tmp_path):
    gen = {
        "count": 50,
        "receiver": {"object": {"major": {"int": [0, 3]}, "minor": {"int": [0, 3]}, "patch": {"int": [0, 3]}}},
        "other": {"object": {"major": {"int": [0, 3]}, "minor": {"int": [0, 3]}, "patch": {"int": [0, 3]}}},
    }
    rows = [
        {
            "id": "row",
            "entry": "shop.version:Version.compare",
            "kind": "agrees",
            "seed": 3,
            "receiver": "shop.version:Version",
            "build": {"other": "shop.version:Version"},
            "reference": "oracles.reference.ref:compare",
            "blob": "oracles/blobs/b.json",
            "generate": gen,
        }
    ]
    blobs = {"oracles/blobs/b.json": [{"receiver": {"major": 1}, "other": {"major": 1}}]}
    ref = {
        "oracles/reference/ref.py": """
def compare(receiver, other):
    a = [receiver.get(k, 0) for k in ("major", "minor", "patch")]
    b = [other.get(k, 0) for k in ("major", "minor", "patch")]
    return (a > b) - (a < b)
"""
    }
    assert run_rows(tmp_path / "right", rows, blobs, semver(), salt="s", references=ref).judged["row"].ok
    wrong = run_rows(tmp_path / "wrong", rows, blobs, semver("[:2]"), salt="s", references=ref).judged["row"]
    assert not wrong.ok and all(r.startswith("generated sample") for r in wrong.reasons)


def test_a_generated_positional_sample_shows_its_receiver_when_it_fails(tmp_path):
    part = {"object": {"major": {"int": [0, 3]}, "minor": {"int": [0, 3]}, "patch": {"int": [0, 3]}}}
    rows = [
        {
            "id": "row",
            "entry": "shop.version:Version.compare",
            "kind": "exact_table",
            "seed": 3,
            "receiver": "shop.version:Version",
            "build": {"other": "shop.version:Version"},
            "args_names": ["other"],
            "reference": "oracles.reference.ref:compare",
            "blob": "oracles/blobs/b.json",
            "generate": {"count": 40, "receiver": part, "other": part},
        }
    ]
    blobs = {"oracles/blobs/b.json": [{"receiver": {"major": 1}, "args": [{"major": 1}], "expected": 0}]}
    ref = {
        "oracles/reference/ref.py": """
def compare(other, *, receiver):
    a = [receiver.get(k, 0) for k in ("major", "minor", "patch")]
    b = [other.get(k, 0) for k in ("major", "minor", "patch")]
    return (a > b) - (a < b)
"""
    }
    wrong = run_rows(tmp_path, rows, blobs, semver("[:2]"), salt="s", references=ref).judged["row"]
    shown = [line for line in wrong.failure_lines() if line.lstrip().startswith("inputs ")]
    assert not wrong.ok and shown
    # Both the receiver and the argument the method was called with: the sample can be rebuilt.
    assert all('"receiver":{"major":' in line and '"args":[{"major":' in line for line in shown), shown
