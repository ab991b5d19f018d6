"""Test support: a `vacuity.RowRunner` without Bazel, for the unit tests of `vacuity` and `promote`.

It runs an oracle file's rows as the oracle test's caller action does (`actions/observe.py` on the
file's inputs and generated views, in a process of its own), on a copy of the work tree's
production packages at its root, with `files` written over the copy, and nothing else on the
caller's Python path: no third-party distribution, no `py_dist_info`. The real runner,
`vacuity.BazelRunner`, builds the caller action itself; tools/testing/adoption.py runs it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import tools.oracle_gate.actions as actions_pkg
from tools.oracle_gate.spec.samples import load_samples
from tools.oracle_gate.spec.schema import parse_oracle
from tools.oracle_gate.spec.views import generated_view, split

OBSERVE = Path(actions_pkg.__file__).parent / "observe.py"


class LocalRunner:
    """Runs an oracle file's rows on a copy of `packages` of the work tree `repo`."""

    def __init__(self, repo: str, packages: Sequence[str], work: Path) -> None:
        self.repo, self.packages, self.work = repo, list(packages), work

    def observe(self, source: str, salt: str, files: Mapping[str, str]) -> Any:
        """The observations document of `source`'s rows (see `vacuity.RowRunner`)."""
        prod = self.work / "prod"
        shutil.rmtree(prod, ignore_errors=True)
        for package in self.packages:
            if os.path.isdir(os.path.join(self.repo, package)):
                shutil.copytree(
                    os.path.join(self.repo, package),
                    prod / package,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "BUILD*"),
                )
        # Oracle files and blobs named in `files` are read from there; the others go over the copy.
        for rel, text in files.items():
            if not rel.startswith("oracles/"):
                (prod / rel).write_text(text, encoding="utf-8")

        def read(rel: str) -> bytes:
            return files[rel].encode("utf-8") if rel in files else Path(self.repo, rel).read_bytes()

        oracle_bytes = read(source)
        rows = [(inv, load_samples(read(inv.blob))) for inv in parse_oracle(oracle_bytes, source).invariants]
        inputs, _ = split(rows)
        generated, _ = generated_view({source: oracle_bytes}, salt)
        for name, doc in (("inputs", inputs), ("generated", generated)):
            (self.work / f"{name}.json").write_text(json.dumps(doc), encoding="utf-8")
        out = self.work / "observations.json"
        out.unlink(missing_ok=True)
        try:
            subprocess.run(
                [
                    sys.executable,
                    "-S",
                    "-B",
                    str(OBSERVE),
                    "--inputs",
                    str(self.work / "inputs.json"),
                    "--generated",
                    str(self.work / "generated.json"),
                    "--out",
                    str(out),
                    "--log",
                    str(self.work / "caller.log"),
                ],
                env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(prod), "TZ": "UTC"},
                capture_output=True,
                check=False,
                timeout=600,
                cwd=self.work,
            )
            return load_samples(out.read_bytes())
        except (OSError, ValueError, subprocess.TimeoutExpired):
            return None


@contextlib.contextmanager
def local_runner(repo: str, environ: Mapping[str, str]) -> Iterator[LocalRunner]:
    """`vacuity.open_runner`'s stand-in: the policy's production packages, a scratch folder."""
    from tools.oracle_gate.approval.policy import parse_policy

    policy = parse_policy(Path(repo, "oracles/policy.toml").read_bytes(), "oracles/policy.toml")
    with tempfile.TemporaryDirectory(prefix="local-rows-") as tmp:
        yield LocalRunner(repo, policy.production_packages, Path(tmp))
