"""Everything Bazel runs inside the build: the pin check, the manifest test, the draw, the
supervisor and caller (`observe.py`, `caller.py`) and the judge (docs/design.md sections 1 and 8).

- `pin_check.py`: the build-time pin check, an action of the `oracle_suite` rule.
- `manifest_test.py`: the Bazel test that `oracles/MANIFEST.sha256` is current.
- `draw.py`: the draw action: every row's generated samples for one run salt.
- `observe.py`: the supervisor of the `OracleCall` action: every row through one caller process.
- `caller.py`: the caller: imports production entries and calls them on the inputs it is sent.
- `reference_check.py`: turns the reference action's results into the reference view.
- `judge.py`: the judge, the oracle test's main: decides every invariant from the expectations view.
- `worker.py`: Bazel's persistent-worker protocol for the pin check, the draw and the reference check.

Each entry point begins with the same line, `GUARD` below, before any other import: Python puts a
script's real folder first on `sys.path` (under Bazel, the source tree's `tools/oracle_gate/actions`),
where a stray file could shadow a module. The line is written out in each file rather than
imported, because an import would be resolved through the very path it guards. A test checks that
each entry point starts with it (tools/tests/scenarios/test_entry_points.py). Being one line of
two imports and a statement, it is longer than the line limit and no sorted import block: its
`noqa` names those rules, and the imports after it are exempt from "import at the top"
(pyproject.toml).
"""

GUARD = (
    "import os, sys; sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) "
    "!= os.path.dirname(os.path.realpath(__file__))]  # noqa: E401,E501,E702,I001 - see actions/__init__.py  "
    "# fmt: skip"
)
