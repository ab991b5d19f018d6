"""The reference implementation never runs in the change's process and its files never reach it:
production code that imports `oracles.reference`, or searches the host for the reference's source,
runfiles or results, finds nothing in the workspace run (blocked) or the clean run (sealed), and a
change that memorised every stored answer of the reference row fails the gate. A reference library
that depends on production or third-party code is refused before anything runs: exit 5 naming it and
the dependency. It needs a nested Bazel because the blocks and the seal it tests are those of the
gate's Bazel runs."""

from __future__ import annotations

import json

import pytest

from tools.testing.workspace_copy import gate, git, nested_env

# apply_rate that uses the reference when it can reach it, and is wrong when it cannot: it passes
# only if the reference's code or results reached production code.
CHEAT = """
import importlib.util, json, os, sys, time

KNOWN = {KNOWN}
SEARCHED = {SEARCHED}
FOUND = []
SEARCHED_ONCE = []

def _search():
    stop = time.monotonic() + 120
    for top in SEARCHED + [os.getcwd()]:
        for folder, dirs, files in os.walk(top):
            if time.monotonic() > stop:
                return
            dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev", "external", "install", ".git", "__pycache__")]
            for name in files:
                if name == "billing_ref.py" or name.endswith(".reference.json"):
                    FOUND.append(os.path.join(folder, name))
    if FOUND:
        raise RuntimeError("reached the reference: " + " ".join(FOUND))

def apply_rate(amount_cents, rate):
    try:
        from oracles.reference import billing_ref
        raise RuntimeError("reached the reference: imported " + billing_ref.__file__)
    except ImportError:
        pass
    if not FOUND and not SEARCHED_ONCE:
        SEARCHED_ONCE.append(True)
        _search()
    for path in FOUND:
        if path.endswith(".py"):
            spec = importlib.util.spec_from_file_location("stolen", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module.apply_rate(amount_cents, rate)
    return KNOWN.get(json.dumps([amount_cents, rate]), 0)
"""


def test_production_code_cannot_reach_the_reference_and_memorised_answers_fail(repo):
    git(repo, "checkout", "-q", "-b", "cheat")
    blob = json.loads((repo / "oracles/blobs/tax_half_even.json").read_text())
    known = {json.dumps(s["args"]): s["expected"] for s in blob}
    # What the workspace run promises to block: this repository and the nested run's home, which
    # holds its output user root (its own output base, every other one there) and the gate's runs.
    # Not the test's own home or /tmp: other tests' copies of the repository and their output bases
    # live there, which git does not name and the gate does not block (docs/threat-model.md, "The
    # workspace run is not a security boundary"); the clean run shows none of them.
    searched = [str(repo), nested_env()["HOME"]]
    (repo / "billing/tax.py").write_text(CHEAT.replace("{KNOWN}", repr(known)).replace("{SEARCHED}", repr(searched)))
    git(repo, "commit", "-q", "--no-gpg-sign", "-am", "memorise the tax table, look for the reference")
    proc = gate(repo, "check", "--base", "main", "--clean", "--verbose")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out[-4000:]
    assert "[4] oracles/billing.toml tax_round_half_even: failed" in proc.stdout, proc.stdout[-3000:]
    # Every stored sample passed (memorised); generated ones failed, and nothing reached the reference.
    assert "generated sample 0 (salt " in proc.stdout, proc.stdout[-3000:]
    assert "reached the reference" not in out, [line for line in out.splitlines() if "reached the reference" in line]
    git(repo, "checkout", "-q", "main")


@pytest.mark.parametrize(
    ("load", "dep", "named"),
    [
        # The attack: the reference reuses a production helper that the change then bends with the entry.
        ("", '"//billing"', "//billing"),
        ('load("@pypi//:requirements.bzl", "requirement")\n', 'requirement("pytest")', "@pypi"),
    ],
)
def test_a_reference_library_with_production_or_third_party_deps_is_exit_5(repo, load, dep, named):
    git(repo, "checkout", "-q", "-B", "reuse", "main")
    try:
        build = repo / "oracles/BUILD.bazel"
        text = build.read_text()
        assert text.count('    imports = [".."],\n') == 1
        build.write_text(
            load + text.replace('    imports = [".."],\n', f'    imports = [".."],\n    deps = [{dep}],\n')
        )
        assert gate(repo, "manifest", "--write").returncode == 0
        git(repo, "commit", "-q", "--no-gpg-sign", "-am", "the reference reuses " + named)
        proc = gate(repo, "check", "--base", "main", "--label", "oracle-change")
    finally:
        git(repo, "checkout", "-q", "-f", "main")
    assert proc.returncode == 5, proc.stdout + proc.stderr[-3000:]
    refused = [line for line in proc.stdout.splitlines() if line.lstrip().startswith("[5] ")]
    assert len(refused) == 1, proc.stdout
    assert (
        refused[0]
        .strip()
        .startswith("[5] oracles/: //oracles:oracles: references: //oracles:reference depends on " + named)
    ), refused
    assert refused[0].strip().endswith("outside oracles/; a reference may use only oracles/ and the standard library")
