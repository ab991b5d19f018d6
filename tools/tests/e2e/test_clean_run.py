"""`check --clean` on a copy of this repository: the workspace run and the sealed clean run.

Each coupling the merge rule rejects is made real here: an environment variable that reaches the
workspace run through the user's ~/.bazelrc, and a fixture file that was never committed, both read
by a harness test; production results that depend on the time zone or the clock, which pass in
both runs with different observation digests; and production code that searches every place it can
name for recorded answers, which finds a copy on the host in the workspace run and nothing in the
sealed root of the clean run. Each exits 6. The sealed root itself is checked from inside.

It needs a nested Bazel because both runs are Bazel runs (the clean run a cold one in its own sealed
root, by design); one copy serves the cases of each shard."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from tools.oracle_gate.runs.root_session import RootSession
from tools.oracle_gate.runs.sealed_root import sealed_root
from tools.testing.workspace_copy import gate, git, nested_env

HARNESS_TEST = "harness/examples_test.py"


def change_harness(ws: Path, branch: str, check_line: str) -> None:
    """Commits, on a new branch, a harness test that fails unless `check_line` holds."""
    git(ws, "checkout", "-q", "-B", branch, "main")
    path = ws / HARNESS_TEST
    path.write_text(path.read_text() + f"\n\ndef test_coupled():\n    import os\n    {check_line}\n")
    git(ws, "commit", "-q", "--no-gpg-sign", "-am", f"harness coupling: {branch}")


def change_production(ws: Path, branch: str, rel: str, old: str, new: str) -> None:
    git(ws, "checkout", "-q", "-B", branch, "main")
    path = ws / rel
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    git(ws, "commit", "-q", "--no-gpg-sign", "-am", f"production coupling: {branch}")


def test_both_runs_agree_on_this_repository(repo):
    proc = gate(repo, "check", "--base", "main", "--clean")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert (
        "clean run           agrees with the workspace run: 6 id(s), same outcomes and observation digests (sandboxed"
    ) in proc.stdout
    assert re.search(r"^ +tax_round_half_even +passed ", proc.stdout, re.M), proc.stdout
    assert "clean run sealed by: bubblewrap " in proc.stdout


def test_a_production_change_that_keeps_the_claims_passes_the_sealed_clean_run(repo):
    change_production(
        repo,
        "refactor",
        "billing/tax.py",
        "def apply_rate(",
        "def _unused_helper():\n    return None\n\n\ndef apply_rate(",
    )
    try:
        proc = gate(repo, "check", "--base", "main", "--clean", "--format", "json")
    finally:
        git(repo, "checkout", "-q", "main")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert report["clean_sealing"].startswith("bubblewrap "), report["clean_sealing"]
    assert set(report["clean_outcomes"].values()) == {"passed"}


# Production code that looks for recorded answers everywhere a module can name: /tmp, the home
# folders, every path in the environment, its runfiles and sys.path, its real path's ancestors (the
# work tree, the output base) and the working directory; three levels deep in each, which reaches
# every copy the test plants. It also knows the home folder of the user who runs the gate
# (HOME_FOLDER: an attacker knows the CI user's home; the caller action itself gets no HOME). It
# learns only from files with its stash's name (STASH_NAME, made anew for each test), so what else
# lives on the machine (other checkouts in a home folder with their own blobs, another test's files
# in /tmp) cannot change what it finds. Having found answers it is right (recorded answers first);
# having found none it truncates: right only where it could read the oracles.
STASH_NAME = "STASH_NAME"
HOME_FOLDER = "HOME_FOLDER"
SEARCH = """

import json as _json
import os as _os
import pwd as _pwd
import sys as _sys

_ANSWERS = {}


def _places():
    here = _os.path.realpath(__file__)
    found = ["/tmp", "HOME_FOLDER", _os.path.expanduser("~"), _pwd.getpwuid(_os.getuid()).pw_dir]
    found += [v for v in _os.environ.values() if v.startswith("/")]
    found += [p for p in _sys.path if p and not p.startswith("/usr/")] + [_os.getcwd()]
    parent = _os.path.dirname(here)
    while parent != "/":
        found.append(parent)
        parent = _os.path.dirname(parent)
    if "/execroot/" in here:
        found.append(here.split("/execroot/")[0])
    return list(dict.fromkeys(found))


def _learn(path):
    try:
        with open(path, "rb") as f:
            rows = _json.loads(f.read(1 << 20))
        for row in rows:
            _ANSWERS[_json.dumps(row["args"])] = row["expected"]
    except Exception:
        pass


for _place in _places():
    _top = _place.rstrip("/").count("/")
    for _folder, _dirs, _names in _os.walk(_place):
        if _folder.count("/") - _top >= 3 or _folder.startswith(("/proc", "/sys", "/dev")):
            _dirs[:] = []
        for _name in _names:
            if _name == "STASH_NAME":
                _learn(_os.path.join(_folder, _name))
_rounding_apply_rate = apply_rate


def apply_rate(amount_cents, rate):
    if not _ANSWERS:
        return int(Decimal(amount_cents) * Decimal(rate))
    key = _json.dumps([amount_cents, rate])
    return _ANSWERS[key] if key in _ANSWERS else _rounding_apply_rate(amount_cents, rate)
"""


@pytest.mark.parametrize("where", ["tmp", "home"])
def test_production_code_that_searches_for_recorded_answers_finds_none_in_either_sealed_run(repo, where):
    # A copy of the expected values somewhere on the host that git does not name (a CI cache in
    # /tmp, a folder in the home of the user who runs the gate): no sandbox flag could know to
    # block it, and neither sealed root shows it. The environment carries nothing in either run:
    # the caller action's variables are fixed by the rule. The home is the nested runs' own (HOME
    # of `nested_env`, which holds their output bases), never the machine user's, whose other
    # files would decide what the search finds.
    env = nested_env()
    parent = {"tmp": "/tmp", "home": env["HOME"]}[where]
    stash = Path(tempfile.mkdtemp(prefix="answers-", dir=parent))
    name = f"answers-{uuid.uuid4().hex}.json"
    shutil.copy(repo / "oracles" / "blobs" / "tax_half_even.json", stash / name)
    git(repo, "checkout", "-q", "-B", f"search-{where}", "main")
    tax = repo / "billing" / "tax.py"
    tax.write_text(tax.read_text() + SEARCH.replace(STASH_NAME, name).replace(HOME_FOLDER, env["HOME"]))
    git(repo, "commit", "-q", "--no-gpg-sign", "-am", "right only with the answers found")
    try:
        proc = gate(repo, "check", "--base", "main", "--clean", "--format", "json", env=env)
    finally:
        git(repo, "checkout", "-q", "-f", "main")
        shutil.rmtree(stash)
    report = json.loads(proc.stdout)
    # Neither run found the copy: the truncating code fails in both, and the runs agree.
    assert report["outcomes"]["tax_round_half_even"] == "failed", report
    assert report["clean_outcomes"]["tax_round_half_even"] == "failed", report
    failing = [c["name"] for c in report["checks"] if not c["ok"]]
    assert "invariant outcomes" in failing and "clean run" not in failing, report
    assert proc.returncode == 4, proc.stdout + proc.stderr[-3000:]


def test_the_sealed_root_shows_the_runs_folder_and_the_system_directories_only(repo, tmp_path):
    folder = Path(tempfile.mkdtemp(prefix="seal-", dir=Path(nested_env()["HOME"])))
    secret = Path(tempfile.mkdtemp(prefix="host-", dir="/tmp"))
    (secret / "answers.json").write_text("[]")
    outside = [str(repo), str(repo / "oracles"), str(secret), "/home", "/work", "/opt", "/srv", "/var"]
    probe = f"""
import os
folder, outside = {str(folder)!r}, {outside!r}
assert os.access(folder, os.W_OK), "the run folder is not writable"
assert os.path.isdir("/usr/bin") and os.path.isfile("/etc/passwd"), "system directories missing"
for path in outside:
    assert not os.path.exists(path), "visible: " + path
# Each ancestor of the run folder holds nothing but the next step towards it.
parent, child = os.path.dirname(folder), folder
while child != "/":
    assert os.listdir(parent) == [os.path.basename(child)] or parent == "/", (parent, os.listdir(parent))
    parent, child = os.path.dirname(parent), parent
assert sorted(os.listdir("/tmp")) == [], "/tmp is not empty"
pids = [n for n in os.listdir("/proc") if n.isdigit()]
assert len(pids) < 10, pids
print("sealed")
"""
    try:
        seal = sealed_root(str(folder), {"PATH": "/usr/bin:/bin"}, [str(repo)])
        proc = subprocess.run(
            seal.wrap(["/usr/bin/python3", "-c", probe], str(folder)),
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin"},
            check=False,
            timeout=60,
        )
    finally:
        shutil.rmtree(secret)
        shutil.rmtree(folder)
    assert proc.returncode == 0 and proc.stdout.strip() == "sealed", proc.stdout + proc.stderr
    assert seal.description().startswith("bubblewrap ")


@pytest.mark.parametrize("unsealed", [False, True], ids=["sealed", "unsealed"])
def test_an_environment_variable_from_the_users_bazelrc(repo, tmp_path, unsealed):
    # The sealed workspace run reads no ~/.bazelrc, like the clean run: the harness fails in both.
    # An unsealed one reads it, and the clean run tells the two apart.
    change_harness(repo, "env-coupling", "assert os.environ.get('ORACLE_DEMO_FLAG') == '1'")
    env = nested_env()
    rc = Path(env["HOME"], ".bazelrc")
    kept = rc.read_text() if rc.exists() else ""
    rc.write_text(kept + "test --test_env=ORACLE_DEMO_FLAG=1\n")
    try:
        proc = gate(
            repo, "check", "--base", "main", "--clean", *(["--unsealed-workspace"] if unsealed else []), env=env
        )
    finally:
        rc.write_text(kept)
        git(repo, "checkout", "-q", "main")
    if unsealed:
        assert proc.returncode == 6, proc.stdout + proc.stderr[-3000:]
        assert "[6] harness/: //harness:examples_test: workspace run PASSED, clean sandboxed run FAILED" in proc.stdout
        assert "; UNSEALED workspace run (--unsealed-workspace);" in proc.stdout.splitlines()[0], proc.stdout
    else:
        assert proc.returncode == 4, proc.stdout + proc.stderr[-3000:]
        assert "[4] harness/: //harness:examples_test FAILED in the workspace run" in proc.stdout


def test_a_fixture_file_left_uncommitted(repo):
    change_harness(
        repo,
        "uncommitted",
        "assert os.path.exists(os.path.join(os.path.dirname(os.path.realpath(__file__)), 'local_fixture.txt'))",
    )
    fixture = repo / "harness" / "local_fixture.txt"
    fixture.write_text("only in this work tree\n")
    try:
        proc = gate(repo, "check", "--base", "main", "--clean")
    finally:
        fixture.unlink()
        git(repo, "checkout", "-q", "main")
    assert proc.returncode == 6, proc.stdout + proc.stderr[-3000:]
    assert "the work tree differs from HEAD (1 path(s), e.g. harness/local_fixture.txt (untracked))" in proc.stdout
    assert "[6] harness/: //harness:examples_test: workspace run PASSED, clean sandboxed run FAILED" in proc.stdout


@pytest.mark.parametrize(
    ("branch", "coupling"),
    [
        # Only carts of more than three lines: the harness's own examples stay deterministic.
        ("time-zone", "import time\n    taxable += (time.localtime(0).tm_min % 2) * (len(lines) > 3)\n"),
        ("clock", "import time\n    taxable += (time.time_ns() % 2) * (len(lines) > 3)\n"),
    ],
)
def test_a_result_that_depends_on_the_time_zone_or_the_clock(repo, branch, coupling):
    change_production(
        repo,
        branch,
        "billing/totals.py",
        "    taxable = max(subtotal_cents(lines) - discount, 0)\n",
        "    taxable = max(subtotal_cents(lines) - discount, 0)\n    " + coupling,
    )
    try:
        proc = gate(repo, "check", "--base", "main", "--clean", "--salt", "fixed-salt")
    finally:
        git(repo, "checkout", "-q", "main")
    assert proc.returncode == 6, proc.stdout + proc.stderr[-3000:]
    assert (
        "[6] oracles/ total_cents_non_negative: workspace run passed, clean sandboxed run passed: observation "
        "digests differ, first at sample "
    ) in proc.stdout
    assert "(salt fixed-salt)" in proc.stdout


def test_nothing_a_command_started_outlives_a_fresh_sealed_session(tmp_path):
    # Here, not in the unit tests: Bazel's sandbox lets no bubblewrap root be made inside it.
    # No `bazel shutdown` at the end: the root's pid namespace ends with its shell, and a process
    # left behind (a server, a daemon that left its session) is killed with it.
    folder = tmp_path / "run"
    folder.mkdir()
    marker = f"oracle-gate-session-test-{os.getpid()}"
    root = sealed_root(str(folder), {"PATH": "/usr/bin:/bin"}, [])
    with RootSession(root, str(folder), {"PATH": "/usr/bin:/bin"}, str(folder)) as s:
        started = s.run(["sh", "-c", f"setsid nohup bash -c 'exec -a {marker} sleep 600' >/dev/null 2>&1 & echo ok"])
        assert started.stdout == "ok\n"
        deadline = time.monotonic() + 30
        while not _running(marker) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _running(marker)
    assert not _running(marker)


def _running(marker: str) -> bool:
    """Whether a process whose command line starts with `marker` runs on this host."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().startswith(marker.encode()):
                    return True
        except OSError:
            continue
    return False
