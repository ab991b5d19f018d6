"""spec/seeds.py: the constants a function compares its inputs with, and pattern examples."""

from __future__ import annotations

import ast
import re

import pytest

from tools.oracle_gate.spec import seeds as seeds_module
from tools.oracle_gate.spec.seeds import MAX_SEED_LEN, MAX_SEEDS, Seeds, seeds


def _seeds(source: str, name: str = "f") -> Seeds:
    tree = ast.parse(source)
    found = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]
    return seeds(found[0], tree)


def test_body_defaults_and_neighbours_in_source_order():
    found = _seeds('def f(x, n=10, *, sep="/"):\n    """Doc."""\n    return x.split(sep)[n] == "end" or 2.5\n')
    assert found.strings == ("/", "end")
    assert found.numbers == (9, 10, 11, 2.5)


def test_bools_none_and_the_docstring_are_left_out():
    found = _seeds('def f(x=None, y=True):\n    """Not a seed."""\n    return x is None and y is False\n')
    assert found == Seeds((), ())


def test_module_names_it_reads_and_functions_it_calls_one_level():
    source = (
        "LIMIT = 64\nUNUSED = 'never'\n"
        "def inner(s):\n    return s + '!' + deeper(s)\n"
        "def deeper(s):\n    return 'too deep'\n"
        "def f(s):\n    return inner(s)[:LIMIT]\n"
    )
    found = _seeds(source)
    assert found.strings == ("!",)
    assert found.numbers == (63, 64, 65)


def test_a_pattern_gives_a_string_it_matches_instead_of_its_text():
    source = (
        "import re\nENTITY = re.compile(r'&#(\\d+);')\n"
        "def f(s):\n    return re.sub(r'(?<=\\d),(?=\\d)', '', ENTITY.sub('', s))\n"
    )
    found = _seeds(source)
    assert "&#1;" in found.strings and "1,1" in found.strings
    assert r"&#(\d+);" not in found.strings


@pytest.mark.parametrize(
    "pattern",
    [
        r"&#x([\da-fA-F]+);",
        r"[^-a-zA-Z0-9]+",
        r"[\W_]+",
        r"-{2,}",
        r"^(foo|bar)\s*=\s*(\w+)$",
        r"a.b[^xyz]c",
        r"(?:ab)+?c",
        r"\bword\b",
    ],
)
def test_every_example_matches_its_pattern(pattern):
    example = seeds_module._example(pattern)
    assert example and re.search(pattern, example)


@pytest.mark.parametrize("pattern", [r"(a)\1", "[", "x" * 300, "(" * 30 + "a{4}" + "){4}" * 30])
def test_a_pattern_it_cannot_follow_gives_no_example(pattern):
    assert seeds_module._example(pattern) == ""


def test_a_pattern_that_backtracks_without_end_is_read_never_run(monkeypatch):
    # Run on the example it makes, this pattern backtracks for hours; seeds must not run it.
    pattern = r"(?=(?:(?:a{4}){4}){3})(?:a+)+(?!)"
    monkeypatch.setattr(seeds_module.re, "search", lambda *a: pytest.fail("a pattern was run"))
    monkeypatch.setattr(seeds_module.re, "match", lambda *a: pytest.fail("a pattern was run"))
    monkeypatch.setattr(seeds_module.re, "fullmatch", lambda *a: pytest.fail("a pattern was run"))
    example = seeds_module._example(pattern)
    # Made from the pattern's items, never checked against it (the parser's items differ between
    # Python versions: some give the run of `a`s, others no example at all).
    assert set(example) <= {"a"}
    found = _seeds(f"import re\nCODE = re.compile(r'{pattern}')\ndef f(t):\n    return CODE.fullmatch(t)\n")
    assert found.strings == ((example,) if example else ())


def test_the_lists_are_capped():
    constants = ", ".join(f"'s{i}'" for i in range(40)) + ", " + ", ".join(str(i * 10) for i in range(40))
    found = _seeds(f"def f(x):\n    return x in ({constants}, {'y' * 100!r})\n")
    assert len(found.strings) == MAX_SEEDS and len(found.numbers) == MAX_SEEDS
    assert all(len(s) <= MAX_SEED_LEN for s in found.strings)


def test_a_method_reads_its_own_body():
    found = _seeds("class C:\n    def f(self, x):\n        return x * 3\n")
    assert found.numbers == (2, 3, 4)


def test_messages_it_raises_or_formats_are_no_seeds():
    source = (
        "def f(x, n):\n"
        "    if x == 'stop':\n"
        "        raise ValueError('is not a plain decimal such as 0.5')\n"
        "    return f'{x} of {n}' if n > 3 else x\n"
    )
    found = _seeds(source)
    assert found.strings == ("stop",)
    assert found.numbers == (2, 3, 4)


def test_a_lone_surrogate_is_no_seed():
    found = _seeds(
        "import re\nSURROGATE = re.compile('[\\ud800-\\udfff]')\n"
        "def f(s):\n    return SURROGATE.sub('\\ud83d', s) + 'ok'\n"
    )
    assert found.strings == ("ok",)
