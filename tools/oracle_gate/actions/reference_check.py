"""The reference check: turns the reference action's results into the reference view.

Usage (from `oracle_suite`, for a suite with `references`):

    reference_check.py --inputs REFERENCE_INPUTS.json --generated GENERATED.json
                       --observations REFERENCE_OBSERVATIONS.json --out REFERENCE.json

The `OracleReference` action ran each row's reference implementation (a function of a package under
`oracles/reference/`, never the change's code) through the gate's supervisor and caller
(`observe.py`, `caller.py`) on the stored samples the reference view names and on the row's
generated samples. This action parses every reply with the blobs' strict JSON rules and writes

    {"schema": 1, "rows": {ID: [expected, ...]}, "raises": {ID: [CLASS or null, ...]}}

one expected value per sample, in the caller's sample order, for the judge alone. `raises` holds
only the rows with `raises_agree` whose reference raised: per sample, the `module:qualname` of the
class the reference raised (its expected value is then null), null where it returned a value
(docs/oracles.md, "Expected exceptions"). A reference that could not be loaded, raised (in a row
without `raises_agree`), hung past the row's `timeout_s`, hit a limit, returned a value that is
not plain JSON (NaN, a subclass of int or str, an object), or gave the wrong number of results, is
an oracle that is broken, not a change that failed: one line per row (`oracle-gate: [5] FILE: row
ID: field reference: ...`) and exit 5, which fails the build. The contract: docs/design.md
sections 2 ("Reference rows") and 8.
"""

import os, sys; sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != os.path.dirname(os.path.realpath(__file__))]  # noqa: E401,E501,E702,I001 - see actions/__init__.py  # fmt: skip

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import Any

from tools.oracle_gate import errors
from tools.oracle_gate.errors import OracleError, error_line
from tools.oracle_gate.spec.judgement import cut, sample_label
from tools.oracle_gate.spec.raised import raised_classes
from tools.oracle_gate.spec.samples import SampleError, load_samples
from tools.oracle_gate.spec.verdicts import plain_problem

VIEW_SCHEMA = 1


def expected_values(
    row: Mapping[str, Any], observation: Mapping[str, Any] | None, generated: int, salt: str
) -> tuple[list[Any], list[str | None], OracleError | None]:
    """The reference's expected values of one row and the classes it raised, or ([], [], the problem).

    Args:
        row: the row of the reference inputs view (`views.reference_row`); with `raises_agree`, a
            raise of the reference is an answer (its class, the first of the reply's classes).
        observation: the reference action's `{"id", "reply"}` or `{"id", "error"}` for it, or None.
        generated: how many generated samples the row has; salt: the salt they were drawn with.

    Returns:
        (one value per sample, None where the reference raised; one class or None per sample, []
        when it raised on none; None) or ([], [], the problem).
    """

    def broken(why: str) -> tuple[list[Any], list[str | None], OracleError]:
        return (
            [],
            [],
            OracleError(
                f"the reference {row['entry']} {why}; the oracle is broken, not the change",
                path=str(row.get("source", "")),
                row=str(row["id"]),
                field="reference",
            ),
        )

    if observation is None:
        return broken("was not run")
    if "error" in observation:
        return broken(cut(str(observation["error"]), 300))
    try:
        reply = load_samples(str(observation.get("reply", "")).encode("utf-8", "surrogatepass"))
    except SampleError as exc:
        return broken(f"gave a reply that is not strict JSON: {exc}")
    if type(reply) is not dict:
        return broken("gave a malformed reply")
    if type(reply.get("error")) is str:
        return broken(cut(reply["error"], 300))
    results = reply.get("results")
    stored = len(row["samples"])
    if type(results) is not list or len(results) != stored + generated:
        return broken(
            f"gave {len(results) if type(results) is list else 'no'} result(s) for {stored + generated} sample(s)"
        )
    values: list[Any] = []
    raised: list[str | None] = []
    for index, result in enumerate(results):
        where = sample_label(index - stored, True, salt) if index >= stored else f"stored sample {index} (0-based)"
        value, cls, why = _answer(result, row.get("raises_agree") is True)
        if why is not None:
            return broken(f"{why} on {where}")
        values.append(value)
        raised.append(cls)
    return values, raised if any(cls is not None for cls in raised) else [], None


def _answer(result: Any, raises_agree: bool) -> tuple[Any, str | None, str | None]:
    """(value, None, None) of a reference's result that is a plain value; (None, class, None) of a
    raised one in a row with `raises_agree` (the raised class's `module:qualname`); else
    (None, None, why it is no answer)."""
    if type(result) is not dict:
        return None, None, "gave a malformed result"
    if "raised" in result and raises_agree:
        found = raised_classes(result)
        return (None, found[1][0], None) if found is not None else (None, None, "gave a malformed raised result")
    if "raised" in result:
        return None, None, f"raised {cut(str(result['raised']), 300)}"
    if len(result) != 1:
        return None, None, "gave a malformed result"
    ((key, value),) = result.items()
    if key == "unplain":
        return None, None, f"returned a value that is not plain JSON: {cut(str(value), 300)}"
    if key != "value":
        return None, None, "gave a malformed result"
    problem = plain_problem(value, "its result")
    if problem:
        return None, None, f"returned a value that is not plain JSON: {problem}"
    return value, None, None


def reference_document(
    inputs: Mapping[str, Any], generated: Mapping[str, Any], observations: Mapping[str, Any]
) -> tuple[dict[str, Any], list[OracleError]]:
    """The reference view and the problems: one OracleError (exit 5) per broken reference."""
    by_id = {row.get("id"): row for row in observations.get("rows", []) if type(row) is dict}
    drawn = generated.get("rows", {})
    salt = str(generated.get("salt", ""))
    rows: dict[str, Any] = {}
    raises: dict[str, Any] = {}
    problems: list[OracleError] = []
    for row in inputs["rows"]:
        values, raised, problem = expected_values(row, by_id.get(row["id"]), len(drawn.get(row["id"], [])), salt)
        if problem is not None:
            problems.append(problem)
        rows[row["id"]] = values
        if raised:
            raises[row["id"]] = raised
    document: dict[str, Any] = {"schema": VIEW_SCHEMA, "rows": rows}
    if raises:
        document["raises"] = raises
    return document, problems


def _read(path: str) -> Any:
    with open(path, "rb") as f:
        return json.loads(f.read())


def main(argv: Sequence[str] | None = None) -> int:
    """Writes the reference view; returns 0, 5 when a reference is broken, 1 when an input is unreadable."""
    parser = argparse.ArgumentParser(prog="reference_check")
    for name in ("--inputs", "--generated", "--observations", "--out"):
        parser.add_argument(name, required=True)
    args = parser.parse_args(argv)
    try:
        inputs, generated, observations = _read(args.inputs), _read(args.generated), _read(args.observations)
    except (OSError, ValueError) as exc:
        print(error_line(errors.UNDECIDED, f"the reference check cannot read its inputs: {exc}"), file=sys.stderr)
        return errors.UNDECIDED
    document, problems = reference_document(inputs, generated, observations)
    for problem in problems:
        print(error_line(problem.code, str(problem)), file=sys.stderr)
    if problems:
        return errors.INVALID_ORACLE
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(json.dumps(document, sort_keys=True, allow_nan=False, separators=(",", ":")) + "\n")  # the C encoder
    return errors.OK


if __name__ == "__main__":
    raise SystemExit(main())
