"""Test support: real temporary git repositories holding a small oracle-gate project."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

from tools.oracle_gate.git.tree import WorkTree
from tools.oracle_gate.suite.manifest import MANIFEST_PATH, render

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}

POLICY = """\
schema = 1
label = "oracle-change"
protected = ["oracles/**", "tools/**", "WORKSPACE", ".bazelrc", ".ci/**"]
production_packages = ["shop"]
"""

BOUND_SAMPLES = [{"a": 1, "b": 2}, {"a": 0, "b": 0}]
IDEM_SAMPLES = [{"state": {"n": 1}, "k": "x"}]
TABLE_SAMPLES = [{"args": [1, 2], "expected": 3}]


def sha256(data: bytes) -> str:
    """Hex sha256 of bytes."""
    return hashlib.sha256(data).hexdigest()


def blob_bytes(samples: object) -> bytes:
    """Canonical JSON bytes of a sample list."""
    return (json.dumps(samples, indent=1) + "\n").encode()


def oracle_toml(rows: list[dict[str, object]]) -> str:
    """Renders rows as a schema-1 oracle file (values as TOML literals via repr/json)."""
    out = ["schema = 1", ""]
    for row in rows:
        out.append("[[invariant]]")
        for key, value in row.items():
            out.append(f"{key} = {toml_value(value)}")
        out.append("")
    return "\n".join(out)


def toml_value(value: object) -> str:
    """A TOML literal for a str, int, float, bool, or a list or dict (inline table) of those."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(value)


def default_rows(min_: int = 0, max_: int = 100) -> list[dict[str, object]]:
    """Three rows, one per kind, pinned to the default blobs."""
    return [
        {
            "id": "sum_in_range",
            "entry": "shop.calc:add",
            "kind": "bound",
            "min": min_,
            "max": max_,
            "blob": "oracles/blobs/bound.json",
            "blob_sha256": sha256(blob_bytes(BOUND_SAMPLES)),
            "seed": 1,
        },
        {
            "id": "norm_is_idempotent",
            "entry": "shop.calc:norm",
            "kind": "idempotent",
            "args": ["k"],
            "repeat": 2,
            "blob": "oracles/blobs/idem.json",
            "blob_sha256": sha256(blob_bytes(IDEM_SAMPLES)),
        },
        {
            "id": "add_table",
            "entry": "shop.calc:add",
            "kind": "exact_table",
            "blob": "oracles/blobs/table.json",
            "blob_sha256": sha256(blob_bytes(TABLE_SAMPLES)),
        },
    ]


IDS = ["sum_in_range", "norm_is_idempotent", "add_table"]

# A word of 12 or more lowercase hex digits: a digest, a salt, a commit id.
_HEX_WORD = re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{12,}(?![0-9A-Za-z])")


def leaks(secret: str, text: str) -> bool:
    """True when `secret` occurs in `text` outside its hex words (`_HEX_WORD`). Digits turn up in
    those by chance: the run's 16-digit salt `6e4740001fa94e85` holds the secret `40001`.

    Raises:
        ValueError: when `secret` is itself a hex word, which this could never see.
    """
    if _HEX_WORD.fullmatch(secret):
        raise ValueError(f"a secret that is a hex word cannot be looked for: {secret}")
    return secret in _HEX_WORD.sub(" ", text)


class GitRepo:
    """A real git repository in a temporary directory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("-c", "init.defaultBranch=main", "init", "-q")

    def git(self, *args: str) -> str:
        """Runs git in the repository and returns stdout; raises on failure."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(GIT_ENV)
        proc = subprocess.run(["git", "-C", str(self.path), *args], env=env, check=True, capture_output=True)
        return proc.stdout.decode()

    def write(self, rel: str, data: str | bytes) -> None:
        """Writes a file (creating directories)."""
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)

    def read(self, rel: str) -> bytes:
        """Reads a file."""
        return (self.path / rel).read_bytes()

    def commit(self, message: str) -> str:
        """Stages everything and commits; returns the commit id."""
        self.git("add", "-A")
        self.git("commit", "-q", "--no-gpg-sign", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD").strip()

    def write_manifest(self) -> None:
        """Regenerates oracles/MANIFEST.sha256 from the work tree."""
        self.write(MANIFEST_PATH, render(WorkTree(str(self.path))))


def make_project(path: Path, rows: list[dict[str, object]] | None = None) -> GitRepo:
    """Creates a repository with policy, one oracle file (three rows), blobs, a production package,
    a harness file and a current manifest, committed on main as the base."""
    repo = GitRepo(path)
    repo.write("oracles/policy.toml", POLICY)
    repo.write("oracles/blobs/bound.json", blob_bytes(BOUND_SAMPLES))
    repo.write("oracles/blobs/idem.json", blob_bytes(IDEM_SAMPLES))
    repo.write("oracles/blobs/table.json", blob_bytes(TABLE_SAMPLES))
    repo.write("oracles/shop.toml", oracle_toml(rows or default_rows()))
    repo.write("shop/__init__.py", "")
    repo.write("shop/calc.py", "def add(a, b):\n    return a + b\n\n\ndef norm(state, k):\n    return state\n")
    repo.write("harness/test_shop.py", "# harness\n")
    repo.write("tools/gate.py", "# the gate\n")
    repo.write_manifest()
    repo.commit("base")
    repo.git("checkout", "-q", "-b", "change")
    return repo


def junit(path: Path, outcomes: dict[str, str], name: str = "results.xml") -> str:
    """Writes a pytest-style JUnit XML file with one testcase per id; returns its path."""
    cases = []
    for ident, outcome in outcomes.items():
        inner = {
            "passed": "",
            "failed": '<failure message="no"/>',
            "error": '<error message="boom"/>',
            "skipped": '<skipped message="skip"/>',
        }[outcome]
        cases.append(f'<testcase classname="t" name="test_invariant[{ident}]" time="0.01">{inner}</testcase>')
    target = path / name
    target.write_text(
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" hostname="h">'
        + "".join(cases)
        + "</testsuite></testsuites>"
    )
    return str(target)
