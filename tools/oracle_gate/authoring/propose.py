"""`propose`: candidate oracle rows for the public production functions a change added or changed,
printed as TOML comments for a human to review (docs/oracles.md, "Proposing rows").

It reads the production diff only: files of the policy's `production_packages`, never `harness/`,
`oracles/` or the gate. A function counts when it is public (a module-level `def` whose name does
not start with `_`) and is new at HEAD or its code differs from the merge base's (compared as
`ast.dump`, so comments and formatting do not count). Nothing is written: the rows need a blob, a
pin (`pin --write`) and a human's label.

With `--model-command`, an external command gets a fixed instruction and the diff on stdin and
answers with TOML rows; only rows that pass the oracle schema (closed kinds, an entry in a
production package) and carry no `blob_sha256` (a proposal never invents a pin) are printed.
"""

from __future__ import annotations

import ast
import shlex
import subprocess
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.git.gitio import git
from tools.oracle_gate.spec.schema import KINDS, parse_oracle
from tools.oracle_gate.text import visible

# Seconds the model command may take.
MODEL_TIMEOUT_S = 300.0
# What the model command is told, before the diff.
INSTRUCTION = """\
You propose oracle rows for a merge gate. Below is a diff of production code.
Answer with TOML only: one [[invariant]] table per proposed row, with the keys
id, entry ("package.module:function"), kind (bound, idempotent or exact_table),
blob ("oracles/blobs/NAME.json") and, for bound rows, min and max; for
idempotent rows, args and repeat. Never write blob_sha256: a human pins blobs.
"""
# Parameter names that suggest a function that maps a state to a new state of the same kind.
_STATE_NAMES = ("state", "ledger", "cart", "doc", "document", "record", "items", "lines")
_IDEMPOTENT_WORDS = ("normalize", "normalise", "canonical", "dedupe", "clean", "refund", "apply_refund", "sort")
_NUMERIC_WORDS = ("total", "sum", "count", "amount", "cents", "price", "balance", "size", "len")


# The fields a kind requires besides the common ones, as placeholders to fill in (docs/oracles.md).
KIND_FIELDS = {
    "bound": ["# min = 0  # the smallest result the claim allows", "# max = 0  # the largest"],
    "idempotent": ['# args = ["..."]  # the sample fields passed as keyword arguments besides the state',
                   "# repeat = 2"],
    "exact_table": [],
}


@dataclass(frozen=True)
class Candidate:
    """A public function a change added or changed, and the row suggested for it.

    Attributes:
        entry: `package.module:function`.
        path: the file, repository-relative.
        line: the `def`'s 1-based line at HEAD.
        status: "added" or "changed".
        signature: the parameter list as written, e.g. "amount_cents, rate".
        kind: the suggested kind (one of KINDS).
        reason: why that kind.
    """

    entry: str
    path: str
    line: int
    status: str
    signature: str
    kind: str
    reason: str

    def suggested_id(self) -> str:
        """An id suggestion: the function's name plus a word for the kind of claim."""
        name = self.entry.rsplit(":", 1)[1].lower()
        suffix = {"bound": "in_range", "idempotent": "is_idempotent", "exact_table": "table"}[self.kind]
        return f"{name}_{suffix}"[:64]


def suggest_kind(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, str]:
    """(kind, reason) for a function, from its name, parameters and return annotation."""
    name = node.name.lower()
    params = [a.arg for a in node.args.args]
    returns = ast.unparse(node.returns) if node.returns is not None else ""
    if returns in ("int", "float") or any(w in name for w in _NUMERIC_WORDS):
        why = f"it returns `{returns}`" if returns else "its name suggests a quantity"
        return "bound", f"{why}; a bound states the range every result must stay in"
    if params and (params[0] in _STATE_NAMES or any(w in name for w in _IDEMPOTENT_WORDS)):
        return ("idempotent", f"its first parameter `{params[0]}` looks like a state it returns a new version of; "
                              "applying it twice should change nothing more")
    return "exact_table", "no range or idempotence suggests itself; a table pins known inputs to known outputs"


def public_functions(source: str) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """name -> node of each public module-level function; {} when the source does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    return {n.name: n for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("_")}


def module_name(path: str) -> str:
    """`billing/tax.py` -> `billing.tax`; a package's `__init__.py` -> the package."""
    parts = path[:-len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _show(repo: str, commit: str, path: str) -> str | None:
    try:
        return git(repo, "show", f"{commit}:{path}").decode("utf-8", "replace")
    except GateError:
        return None


def candidates(repo: str, base: str, head: str, paths: Sequence[str]) -> list[Candidate]:
    """The public functions of `paths` (production `.py` files) added or changed between `base`
    and `head`, in file and line order."""
    found = []
    for path in sorted(paths):
        new_source = _show(repo, head, path)
        if new_source is None:
            continue
        old = public_functions(_show(repo, base, path) or "")
        for name, node in sorted(public_functions(new_source).items(), key=lambda item: item[1].lineno):
            before = old.get(name)
            if before is not None and ast.dump(before) == ast.dump(node):
                continue
            kind, reason = suggest_kind(node)
            found.append(Candidate(f"{module_name(path)}:{name}", path, node.lineno,
                                   "added" if before is None else "changed", ast.unparse(node.args), kind, reason))
    return found


def render(candidate: Candidate) -> list[str]:
    """A candidate as TOML comment lines."""
    c = candidate
    return [
        f"# {c.entry} ({c.status} at {c.path}:{c.line})",
        "# [[invariant]]",
        f'# id = "{c.suggested_id()}"',
        f'# entry = "{c.entry}"',
        f'# kind = "{c.kind}"  # {c.reason}',
        *KIND_FIELDS[c.kind],
        f'# blob = "oracles/blobs/{c.suggested_id()}.json"  # samples for {c.entry.rsplit(":", 1)[1]}({c.signature})',
        "# # needs `pin --write` once the blob exists (it adds blob_sha256)",
        f"# rationale: {c.entry.rsplit(':', 1)[1]}({c.signature}) was {c.status} in {c.path}",
        "",
    ]


def model_rows(command: str, diff: str, allowed: Sequence[str]) -> tuple[list[str], list[str]]:
    """Runs `command` (split like a shell would, run without a shell) with INSTRUCTION and `diff`
    on stdin; returns (accepted rows as TOML comment lines, one reason per rejected row).

    Raises:
        GateError: (exit 1) when the command cannot run, fails, times out, or prints no TOML.
    """
    try:
        proc = subprocess.run(shlex.split(command), input=INSTRUCTION + "\n" + diff, capture_output=True, text=True,
                              timeout=MODEL_TIMEOUT_S, check=False)
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        raise GateError(f"--model-command could not run: {exc}") from None
    if proc.returncode != 0:
        raise GateError(f"--model-command exited {proc.returncode}: {visible(proc.stderr.strip()[-300:])}")
    try:
        rows = tomllib.loads(proc.stdout).get("invariant", [])
    except tomllib.TOMLDecodeError as exc:
        raise GateError(f"--model-command did not answer with TOML: {exc}") from None
    accepted: list[str] = []
    rejected: list[str] = []
    for index, row in enumerate(rows if isinstance(rows, list) else []):
        label = row.get("id", f"row {index + 1}") if isinstance(row, dict) else f"row {index + 1}"
        if not isinstance(row, dict):
            rejected.append(f"{label}: not a table")
            continue
        if "blob_sha256" in row:
            rejected.append(f"{label}: carries a blob_sha256; a proposal never invents a pin")
            continue
        if row.get("kind") not in KINDS:
            rejected.append(f"{label}: kind {row.get('kind')!r} is not one of {', '.join(KINDS)}")
            continue
        text = _row_toml({**row, "blob_sha256": "0" * 64})
        problems = parse_oracle(("schema = 1\n\n" + text).encode(), "proposal", allowed).problems
        if problems:
            rejected.append(f"{label}: {problems[0]}")
            continue
        accepted.extend(["# [[invariant]]  # from --model-command; needs a blob and `pin --write`"]
                        + [f"# {line}" for line in _row_toml(row).splitlines()[1:]] + [""])
    return accepted, rejected


def _row_toml(row: dict[str, object]) -> str:
    """One `[[invariant]]` table from a parsed row (strings, numbers, lists and tables of those)."""
    lines = ["[[invariant]]"]
    for key, value in row.items():
        lines.append(f"{_key(key)} = {_value(value)}")
    return "\n".join(lines) + "\n"


def _key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() and key.isascii() else _value(key)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(str(k))} = {_value(v)}" for k, v in value.items()) + " }"
    raise GateError(f"--model-command answered a value TOML cannot hold here: {value!r}")
