"""Build-time pin check, run by the `oracle_suite` Starlark rule as a Bazel action.

Usage:
    pin_check --out INDEX [--inputs INPUTS --expectations EXPECTATIONS] [--reference-inputs REFERENCE]
              [--hidden-inputs HIDDEN_INPUTS --hidden-expectations HIDDEN_EXPECTATIONS]
              --policy PATH=FILE --oracle PATH=FILE... --blob PATH=FILE...

PATH is the repository-relative path, FILE where the action finds the bytes. Every oracle file is
validated (schema 1) and every row's blob is hashed; the sha256 must equal the row's `blob_sha256`.
On success the JSON index of oracle files and blobs is written to INDEX, the inputs view to INPUTS
(with the policy's production packages, whose functions the caller records as run) and the sealed
expectations view to EXPECTATIONS (`spec/views.py`), the reference inputs view to REFERENCE (given
by a suite with `references`; without it, a row that names a `reference` is a problem), the hidden
views of the rows whose hidden blob the action was given (only the clean run's tree holds one, at
`hidden_store.hidden_path`) to HIDDEN_INPUTS and HIDDEN_EXPECTATIONS, and the exit code is 0; on any
problem one line per problem goes to stderr (`oracle-gate: [5] ...`, errors.error_line) and the exit
code is 5, which fails the build; a file that cannot be read is exit 1. The validation is the
loader's own (loader.py), so the build and `check` judge oracle files alike.
The contract: docs/design.md sections 2, 4 (checkout rewrites of blobs) and 8 (the views).
"""

import os, sys; sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != os.path.dirname(os.path.realpath(__file__))]  # noqa: E401,E702 - see actions/__init__.py



import argparse
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tools.oracle_gate import errors
from tools.oracle_gate.errors import OracleError, error_line
from tools.oracle_gate.suite.loader import check_blob, load_policy, read_oracle_files
from tools.oracle_gate.approval.policy import Policy
from tools.oracle_gate.spec.views import reference_view, split
from tools.oracle_gate.spec.samples import load_samples
from tools.oracle_gate.spec.schema import Invariant, hidden_path
from tools.oracle_gate.git.tree import REGULAR, Entry, Hashed


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
    """The rows' hidden samples this action was given (only the clean run's tree holds them).

    Attributes:
        rows: (the row as its hidden blob's row: that blob, its digest, no generator and no
            reference; the hidden blob's parsed samples) per row whose hidden blob is here.
        absent: the ids of rows with a `hidden_sha256` whose blob is not among the action's blobs.
    """

    rows: list[tuple[Invariant, Any]] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)


def hidden_rows(rows: Sequence[tuple[Invariant, Any]], blobs: dict[str, str]) -> tuple[list[OracleError], Hidden]:
    """The hidden samples of the verified `rows`: each row's `hidden_sha256` blob, when among
    `blobs` at `hidden_store.hidden_path(digest)`, checked like the row's blob (pin and shape).

    Raises:
        OSError: when a file cannot be read.
    """
    problems: list[OracleError] = []
    out = Hidden()
    for inv, _ in rows:
        if inv.hidden_sha256 is None:
            continue
        path = hidden_path(inv.hidden_sha256)
        if path not in blobs:
            out.absent.append(inv.id)
            continue
        row = replace(inv, blob=path, blob_sha256=inv.hidden_sha256, generate=None, reference=None)
        found, data = _check_pin(row, blobs, None)
        if found:
            # The store's file was verified before it was copied: a mismatch here is not the oracle
            # author's, and the message must not quote the hidden samples.
            problems.append(OracleError("its hidden blob does not match hidden_sha256 or the row's sample shape",
                                        path=inv.source, row=inv.id, field="hidden_sha256"))
            continue
        out.rows.append((row, load_samples(data)))
    return problems, out


def hidden_views(hidden: Hidden, packages: Sequence[str] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(hidden inputs view, hidden expectations view): `views.split` of the hidden rows; the
    expectations view also lists the `absent` ids. Raises nothing."""
    inputs, expectations = split(hidden.rows, packages)
    expectations["absent"] = sorted(hidden.absent)
    return inputs, expectations


def verify(
    policy: tuple[str, str] | None, oracles: dict[str, str], blobs: dict[str, str]
) -> tuple[list[OracleError], dict[str, object], list[tuple[Invariant, Any]]]:
    """Validates oracle files and checks every blob pin, through the loader's own validation
    (`loader.load_policy`, `loader.read_oracle_files`, `loader.check_blob`).

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
        return [OracleError(
            f"{inv.blob} is not among the blobs of this oracle_suite target (or does not exist)",
            path=inv.source, row=inv.id, field="blob")], b""
    # Bazel presents inputs as symlinks into the source tree; following them must end
    # at a file whose path is still the blob's own, i.e. inside oracles/blobs/. The hash
    # is of the bytes read through that path.
    real = os.path.realpath(file)
    if not real.replace(os.sep, "/").endswith("/" + inv.blob):
        return [OracleError(
            f"{inv.blob} resolves to {real}, outside oracles/blobs/; blobs must be regular files",
            path=inv.source, row=inv.id, field="blob")], b""
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
        problems += [OracleError(f"names the reference {inv.reference}, but this oracle_suite target has no "
                                 "references: add the reference package's py_library to its `references`",
                                 path=inv.source, row=inv.id, field="reference")
                     for inv, _ in rows if inv.reference is not None]
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
