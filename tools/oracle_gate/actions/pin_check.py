"""Build-time pin check, run by the `oracle_suite` Starlark rule as a Bazel action.

Usage:
    pin_check --out INDEX [--inputs INPUTS --expectations EXPECTATIONS] [--reference-inputs REFERENCE]
              [--hidden-inputs HIDDEN_INPUTS --hidden-expectations HIDDEN_EXPECTATIONS]
              --policy PATH=FILE --oracle PATH=FILE... --blob PATH=FILE...

PATH is the repository-relative path, FILE where the action finds the bytes. Every oracle file is
validated (schema 1) and every row's blob is hashed; the sha256 must equal the row's `blob_sha256`.
On success the JSON index of oracle files and blobs is written to INDEX, the inputs view to INPUTS
(with the policy's production packages, whose functions the caller records as run) and the
expectations view to EXPECTATIONS (`spec/views.py`), the reference inputs view to REFERENCE (given
by a suite with `references`; without it, a row that names a `reference` is a problem), the hidden
views to HIDDEN_INPUTS and HIDDEN_EXPECTATIONS (the inputs of the rows' hidden samples, only when the
hidden phase's tree holds the gate's hidden inputs view at `schema.HIDDEN_INPUTS`; no expected
value), and the exit code is 0; on any problem one line per problem goes to stderr
(`oracle-gate: [5] ...`, errors.error_line) and the exit code is 5, which fails the build; a file
that cannot be read is exit 1. The validation is the
loader's own (loader.py), so the build and `check` judge oracle files alike.
The contract: docs/design.md sections 2, 4 (checkout rewrites of blobs) and 8 (the views).
"""

import os, sys; sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != os.path.dirname(os.path.realpath(__file__))]  # noqa: E401,E501,E702,I001 - see actions/__init__.py  # fmt: skip


import argparse
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tools.oracle_gate import errors
from tools.oracle_gate.approval.policy import Policy, load_policy
from tools.oracle_gate.errors import OracleError, error_line
from tools.oracle_gate.git.objects import Hashed
from tools.oracle_gate.git.tree import REGULAR, Entry
from tools.oracle_gate.spec.samples import SampleError, load_samples
from tools.oracle_gate.spec.schema import HIDDEN_DIR, HIDDEN_INPUTS, Invariant
from tools.oracle_gate.spec.views import VIEW_SCHEMA, reference_view, split
from tools.oracle_gate.suite.loader import check_blob, read_oracle_files


def _pairs(values: Sequence[str]) -> dict[str, str]:
    out = {}
    for value in values:
        path, sep, file = value.partition("=")
        if not sep:
            raise SystemExit(error_line(errors.UNDECIDED, f"expected PATH=FILE, got {value!r}"))
        out[path] = file
    return out


def _read(file: str) -> bytes:
    with open(file, "rb") as f:
        return f.read()


class ActionFiles:
    """The files Bazel gives the action, as a tree (tree.py) for the loader: every entry is a
    regular file whose `ref` is where the action finds it; `read` follows Bazel's symlinks.

    Raises (from `read`):
        OSError: when a file cannot be read (`main` reports it, exit 1).
    """

    committed = False

    def __init__(self, files: Mapping[str, str]) -> None:
        self._entries = {path: Entry(REGULAR, file) for path, file in files.items()}

    def files(self, prefix: str) -> dict[str, Entry]:
        top = prefix.rstrip("/") + "/"
        return {path: e for path, e in self._entries.items() if not prefix or path.startswith(top)}

    def read(self, entry: Entry) -> bytes:
        return _read(entry.ref)

    def digest(self, entry: Entry) -> str:
        return hashlib.sha256(self.read(entry)).hexdigest()

    def known_digest(self, entry: Entry) -> str | None:
        """None: the action hashes every file it is given."""
        return None

    def stream(self, entry: Entry) -> Hashed:
        return Hashed([self.read(entry)])

    def vouched(self, entry: Entry, claim: str) -> bool:
        """False: the action checks every file it is given."""
        return False


@dataclass
class Hidden:
    """The rows' hidden samples this action was given: only the hidden phase's tree holds them, as
    the hidden inputs view the gate split from the hidden blobs (`schema.HIDDEN_INPUTS`, hidden.py).

    Attributes:
        rows: the inputs-view rows (`views.input_row`) of this suite's rows with a `hidden_sha256`
            that the view holds, sorted by id; never an expected value.
        ids: the ids of every row of this suite with a `hidden_sha256`, sorted.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)


def hidden_rows(rows: Sequence[tuple[Invariant, Any]], blobs: dict[str, str]) -> tuple[list[OracleError], Hidden]:
    """The hidden samples' inputs of the verified `rows`: the rows of the gate's hidden inputs view
    (`blobs[schema.HIDDEN_INPUTS]`, when given) whose id is one of theirs with a `hidden_sha256`.
    Any other file under `schema.HIDDEN_DIR`, or a view that is not strict JSON of that shape, is a
    problem (exit 5) that quotes nothing of it: only the gate writes there (a commit may not).

    Raises:
        OSError: when a file cannot be read.
    """
    out = Hidden(ids=sorted(inv.id for inv, _ in rows if inv.hidden_sha256 is not None))
    problems: list[OracleError] = []
    for path in sorted(p for p in blobs if p.startswith(HIDDEN_DIR + "/") and p != HIDDEN_INPUTS):
        problems.append(
            OracleError(f"only the gate's hidden inputs view ({HIDDEN_INPUTS}) may lie in {HIDDEN_DIR}/", path=path)
        )
    if HIDDEN_INPUTS not in blobs:
        return problems, out
    try:
        view = load_samples(_read(blobs[HIDDEN_INPUTS]))
    except SampleError:
        view = None
    found = view.get("rows") if type(view) is dict else None
    if type(found) is not list or not all(type(r) is dict and type(r.get("id")) is str for r in found):
        problems.append(OracleError("is not the gate's hidden inputs view", path=HIDDEN_INPUTS))
        return problems, out
    wanted = set(out.ids)
    out.rows = sorted((r for r in found if r["id"] in wanted), key=lambda r: r["id"])
    return problems, out


def hidden_views(hidden: Hidden, packages: Sequence[str] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(hidden inputs view, hidden expectations view). The inputs view holds `hidden.rows` (with the
    policy's production packages, as `views.split` gives them); the expectations view holds no row
    and lists every hidden id as `absent`: the gate judges the hidden samples in its own process
    (hidden.py), and no judge in any Bazel invocation holds them. Raises nothing."""
    inputs: dict[str, Any] = {"schema": VIEW_SCHEMA, "rows": hidden.rows}
    if packages is not None:
        inputs["production_packages"] = sorted(set(packages))
    return inputs, {"schema": VIEW_SCHEMA, "rows": [], "absent": hidden.ids}


def verify(
    policy: tuple[str, str] | None, oracles: dict[str, str], blobs: dict[str, str]
) -> tuple[list[OracleError], dict[str, object], list[tuple[Invariant, Any]]]:
    """Validates oracle files and checks every blob pin, through the loader's own validation
    (`policy.load_policy`, `loader.read_oracle_files`, `loader.check_blob`).

    Args:
        policy: (repository path, file) of policy.toml, or None to skip the production-package check.
        oracles: repository path -> file of each oracle TOML.
        blobs: repository path -> file of each blob the rule was given.

    Returns:
        (problems, index, rows): one OracleError per problem, the index of verified files, and
        (row, parsed blob samples) for every row whose blob is verified. A fix message names the
        policy's label when the policy is given and valid.

    Raises:
        OSError: when a file cannot be read.
    """
    problems: list[OracleError] = []
    tree = ActionFiles({**oracles, **({policy[0]: policy[1]} if policy else {})})
    parsed: Policy | None = None
    if policy:
        try:
            parsed = load_policy(tree, Entry(REGULAR, policy[1]), policy[0])
        except OracleError as exc:
            problems.append(exc)
    files, found = read_oracle_files(tree, {path: Entry(REGULAR, file) for path, file in oracles.items()}, parsed)
    problems.extend(found)
    label = parsed.label if parsed else None
    used: dict[str, str] = {}
    rows: list[tuple[Invariant, Any]] = []
    for oracle in files:
        for inv in oracle.invariants:
            found, data = _check_pin(inv, blobs, label)
            problems.extend(found)
            if not found:
                used[inv.blob] = inv.blob_sha256
                rows.append((inv, load_samples(data)))
    index = {
        "schema": 1,
        "oracles": sorted(oracles),
        "blobs": dict(sorted(used.items())),
    }
    return problems, index, rows


def _check_pin(inv: Invariant, blobs: dict[str, str], label: str | None) -> tuple[list[OracleError], bytes]:
    """The problems of a row's blob and pin (none when it is verified), and the blob's bytes when read."""
    file = blobs.get(inv.blob)
    if file is None:
        return [
            OracleError(
                f"{inv.blob} is not among the blobs of this oracle_suite target (or does not exist)",
                path=inv.source,
                row=inv.id,
                field="blob",
            )
        ], b""
    # Bazel presents inputs as symlinks into the source tree; following them must end
    # at a file whose path is still the blob's own, i.e. inside oracles/blobs/. The hash
    # is of the bytes read through that path.
    real = os.path.realpath(file)
    if not real.replace(os.sep, "/").endswith("/" + inv.blob):
        return [
            OracleError(
                f"{inv.blob} resolves to {real}, outside oracles/blobs/; blobs must be regular files",
                path=inv.source,
                row=inv.id,
                field="blob",
            )
        ], b""
    data = _read(real)
    return check_blob(inv, Entry(REGULAR, file), data, label=label), data


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the check; returns 0 and writes the index when every pin holds, else 5."""
    parser = argparse.ArgumentParser(prog="pin_check")
    parser.add_argument("--out", required=True)
    parser.add_argument("--inputs")
    parser.add_argument("--expectations")
    parser.add_argument("--reference-inputs")
    parser.add_argument("--hidden-inputs")
    parser.add_argument("--hidden-expectations")
    parser.add_argument("--policy")
    parser.add_argument("--oracle", action="append", default=[])
    parser.add_argument("--blob", action="append", default=[])
    args = parser.parse_args(argv)
    policy = None
    if args.policy:
        path, _, file = args.policy.partition("=")
        policy = (path, file)
    try:
        blobs = _pairs(args.blob)
        problems, index, rows = verify(policy, _pairs(args.oracle), blobs)
        found, hidden = hidden_rows(rows, blobs)
        problems += found
    except OSError as exc:
        print(error_line(errors.UNDECIDED, f"cannot read {exc.filename}: {exc.strerror}"), file=sys.stderr)
        return errors.UNDECIDED
    if not args.reference_inputs:
        problems += [
            OracleError(
                f"names the reference {inv.reference}, but this oracle_suite target has no "
                "references: add the reference package's py_library to its `references`",
                path=inv.source,
                row=inv.id,
                field="reference",
            )
            for inv, _ in rows
            if inv.reference is not None
        ]
    for problem in problems:
        print(error_line(problem.code, str(problem)), file=sys.stderr)
    if problems:
        return errors.INVALID_ORACLE
    _write_json(args.out, index)
    if args.inputs or args.expectations:
        inputs, expectations = split(rows, policy_packages(policy))
        _write_json(args.inputs, inputs)
        _write_json(args.expectations, expectations)
    if args.reference_inputs:
        _write_json(args.reference_inputs, reference_view(rows))
    if args.hidden_inputs or args.hidden_expectations:
        hidden_inputs, hidden_expectations = hidden_views(hidden, policy_packages(policy))
        _write_json(args.hidden_inputs, hidden_inputs)
        _write_json(args.hidden_expectations, hidden_expectations)
    return errors.OK


def policy_packages(policy: tuple[str, str] | None) -> tuple[str, ...] | None:
    """The production packages of the policy the action was given ((repository path, file)), for
    the inputs view (`views.split`); None without a policy or when it does not parse (then `verify`
    has already reported it and nothing is written). Raises nothing."""
    if policy is None:
        return None
    tree = ActionFiles({policy[0]: policy[1]})
    try:
        parsed = load_policy(tree, Entry(REGULAR, policy[1]), policy[0])
    except (OracleError, OSError):
        return None
    return parsed.production_packages if parsed is not None else None


def _write_json(path: str | None, document: dict[str, Any]) -> None:
    if path:
        # `json.dumps` without `indent`: only that form runs json's C encoder (`json.dump` and any
        # indent run the pure-Python one, most of a pin check's time on a suite of small blobs).
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps(document, sort_keys=True, allow_nan=False, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
