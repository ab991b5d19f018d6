"""suite/sample_changes.py: samples added, removed and changed between two blobs of a row."""

from __future__ import annotations

from tools.oracle_gate.suite.sample_changes import MAX_SHOWN, ChangedSample, canonical, changed_lines, sample_changes

OLD = [{"args": [1, 2], "expected": 3}, {"args": [2, 2], "expected": 4}, {"args": [5, 5], "expected": 10}]


def test_a_changed_expected_value_is_shown_with_its_inputs_and_both_values():
    new = [{"args": [1, 2], "expected": 4}, {"args": [2, 2], "expected": 4}, {"args": [5, 5], "expected": 11}]
    found = sample_changes("exact_table", OLD, new)
    assert (found.added_count, found.removed_count, found.changed_count) == (0, 0, 2)
    assert found.changed == (ChangedSample('{"args":[1,2]}', "3", "4"), ChangedSample('{"args":[5,5]}', "10", "11"))
    assert changed_lines(found, "  ") == [
        "  samples: 0 added, 0 removed, 2 with a changed expected value (3 at the base, 3 at HEAD)",
        '    changed {"args":[1,2]}: expected 3 -> 4',
        '    changed {"args":[5,5]}: expected 10 -> 11',
    ]


def test_added_and_removed_samples_are_told_apart_from_changed_ones():
    new = [{"args": [2, 2], "expected": 4}, {"args": [7, 1], "expected": 8}]
    found = sample_changes("exact_table", OLD, new)
    assert found.added == ('{"args":[7,1]}: expected 8',)
    assert found.removed == ('{"args":[1,2]}: expected 3', '{"args":[5,5]}: expected 10')
    assert found.changed_count == 0


def test_json_types_count_one_is_not_one_point_zero_nor_true():
    new = [{"args": [1, 2], "expected": 3.0}, {"args": [2, 2], "expected": 4}, {"args": [5, 5], "expected": True}]
    found = sample_changes("exact_table", OLD, new)
    assert [(c.old, c.new) for c in found.changed] == [("3", "3.0"), ("10", "true")]


def test_repeated_inputs_pair_up_in_order():
    old = [{"args": [1], "expected": 1}, {"args": [1], "expected": 1}]
    new = [{"args": [1], "expected": 1}, {"args": [1], "expected": 2}, {"args": [1], "expected": 1}]
    found = sample_changes("exact_table", old, new)
    assert (found.added_count, found.removed_count, found.changed_count) == (1, 0, 1)


def test_kinds_without_expected_values_have_added_and_removed_samples_only():
    found = sample_changes("bound", [{"a": 1}, {"a": 2}], [{"a": 2}, {"a": 3}])
    assert found.added == ('{"a":3}',) and found.removed == ('{"a":1}',) and found.changed_count == 0


def test_key_order_does_not_make_a_sample_new():
    found = sample_changes("bound", [{"a": 1, "b": 2}], [{"b": 2, "a": 1}])
    assert (found.added_count, found.removed_count) == (0, 0)


def test_only_the_first_samples_are_shown_then_a_count():
    old = [{"args": [i], "expected": i} for i in range(MAX_SHOWN + 5)]
    new = [{"args": [i], "expected": i + 1} for i in range(MAX_SHOWN + 5)]
    found = sample_changes("exact_table", old, new)
    assert found.changed_count == MAX_SHOWN + 5 and len(found.changed) == MAX_SHOWN
    assert found.lines()[-1] == "... and 5 more changed"
    assert found.as_json()["changed"] == MAX_SHOWN + 5 and len(found.as_json()["shown"]["changed"]) == MAX_SHOWN


def test_a_blob_that_is_not_a_list_is_a_problem_not_an_error():
    found = sample_changes("exact_table", {"a": 1}, OLD)
    assert found.summary() == "not compared: the base's blob is not a list of samples"


def test_long_and_control_character_values_stay_on_one_line():
    text = canonical({"s": "a\nb" + "x" * 400})
    assert "\n" not in text and text.endswith("...") and len(text) <= 303


def test_retyped_inputs_show_both_answers():
    found = sample_changes("exact_table", [{"args": [1, 2], "expected": 3}], [{"args": [1.0, 2], "expected": 4}])
    assert found.added == ('{"args":[1.0,2]}: expected 4',) and found.removed == ('{"args":[1,2]}: expected 3',)


def test_a_changed_raises_is_a_changed_expected_value():
    old = [
        {"args": ["x"], "raises": "ValueError"},
        {"args": ["y"], "expected": 1},
        {"args": ["z"], "raises": "KeyError"},
    ]
    new = [
        {"args": ["x"], "raises": "KeyError"},
        {"args": ["y"], "raises": "ValueError"},
        {"args": ["z"], "raises": "KeyError"},
    ]
    found = sample_changes("exact_table", old, new)
    assert found.changed == (
        ChangedSample('{"args":["x"]}', 'raises "ValueError"', 'raises "KeyError"'),
        ChangedSample('{"args":["y"]}', "1", 'raises "ValueError"'),
    )
    bound = sample_changes("bound", [{"a": 1, "raises": "ValueError"}], [{"a": 1}, {"a": 2, "raises": "KeyError"}])
    assert bound.changed == (ChangedSample('{"a":1}', 'raises "ValueError"', "-"),)
    assert bound.added == ('{"a":2}: expected raises "KeyError"',)
