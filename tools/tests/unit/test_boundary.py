"""boundary.py: each generator's edges, and boundary samples that change one field at a time."""

from __future__ import annotations

from tools.oracle_gate.authoring.boundary import boundary_samples, edges
from tools.oracle_gate.spec.generate import (
    ChoiceGen,
    FloatGen,
    GenerateSpec,
    IntGen,
    ListGen,
    ObjectGen,
    OneOfGen,
    OptionalGen,
    StringGen,
)


def test_the_edges_of_each_generator():
    assert edges(IntGen(5, 9), 7) == [5, 9, 0, -1, 1]
    assert edges(IntGen(-1, 1), 0) == [-1, 1, 0]
    assert edges(FloatGen(0.5, 2.0), 1.0) == [0.5, 2.0, 0.0, -1.0, 1.0]
    assert edges(StringGen("ab", 0, 3), "a") == ["", "aaaa"]
    assert edges(ListGen(IntGen(0, 9), 1, 2), [4, 5]) == [[], [4, 5, 4]]
    assert edges(ListGen(IntGen(0, 9), 0, 2), []) == [[]]
    assert edges(ChoiceGen(('"x"', "1", "1.0", "true")), "x") == ["x", 1, 1.0, True]
    assert edges(OptionalGen(IntGen(3, 4)), 3) == [None, 3, 4, 0, -1, 1]
    assert edges(ObjectGen((("a", IntGen(0, 1)),)), {"a": 0}) == []
    assert edges(StringGen(" ", 0, 1, ("&#1;", "Word")), "") == ["", "  ", "&#1;", "Word"]
    assert edges(OneOfGen((IntGen(2, 3), ChoiceGen(('"x"', "2")))), 2) == [2, 3, 0, -1, 1, "x"]


def test_one_field_changes_at_a_time_and_the_drawn_value_is_not_repeated():
    spec = GenerateSpec(3, (("a", IntGen(0, 10)), ("s", StringGen("z", 0, 1))))
    samples = boundary_samples(spec, {"a": 10, "s": "z"})
    assert samples == [
        {"a": 0, "s": "z"},
        {"a": -1, "s": "z"},
        {"a": 1, "s": "z"},
        {"a": 10, "s": ""},
        {"a": 10, "s": "zz"},
    ]


def test_packed_samples_keep_the_drawn_shape():
    spec = GenerateSpec(2, (("x", IntGen(1, 2)), ("y", IntGen(0, 0))), packed=("x", "y"))
    samples = boundary_samples(spec, {"args": [1, 0], "receiver": [7]})
    assert {"args": [2, 0], "receiver": [7]} in samples
    assert {"args": [1, -1], "receiver": [7]} in samples
    assert all(set(s) == {"args", "receiver"} for s in samples)
