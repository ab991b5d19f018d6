"""The verdict cannot be forged: `check` on a copy of this repository, real git, real nested Bazel.

Every branch below commits the same production bug (`billing.tax.apply_rate` truncates instead of
rounding half to even) together with one way of claiming a pass anyway. The gate owns the row
runner, so each still ends in exit 4 with the invariant's own failure.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tools.oracle_gate.runs.workspace_seal import workspace_folder
from tools.testing.workspace_copy import bazel, gate, git, nested_env

TRUNCATED = "[4] oracles/billing.toml tax_round_half_even: failed: the invariant does not hold"


def truncate_tax(ws: Path) -> None:
    tax = ws / "billing" / "tax.py"
    tax.write_text(
        tax.read_text()
        .replace("from decimal import ROUND_HALF_EVEN,", "from decimal import ROUND_DOWN, ROUND_HALF_EVEN,")
        .replace("rounding=ROUND_HALF_EVEN,", "rounding=ROUND_DOWN,")
    )


def attack(
    ws: Path,
    branch: str,
    files: dict[str, str],
    append: dict[str, str] | None = None,
    bug: bool = True,
    label: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Commits the tax bug plus `files` (written) and `append` (appended) on `branch`, runs `check`
    (with the policy's label when `label`: a human approved the protected paths it touches)."""
    git(ws, "checkout", "-q", "-B", branch, "main")
    try:
        if bug:
            truncate_tax(ws)
        for rel, text in files.items():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text(text)
        for rel, text in (append or {}).items():
            with open(ws / rel, "a", encoding="utf-8") as f:
                f.write(text)
        git(ws, "add", "-A")
        git(ws, "commit", "-q", "--no-gpg-sign", "-m", branch)
        return gate(ws, "check", "--base", "main", "--verbose", *(["--label", "oracle-change"] if label else []))
    finally:
        git(ws, "checkout", "-q", "-f", "main")


FORGED_JUNIT = """
import os
ids = ["refund_is_idempotent", "tax_round_half_even", "total_cents_non_negative"]
cases = "".join(f'<testcase classname="oracle" name="invariant[{i}]"/>' for i in ids)
with open(os.environ["XML_OUTPUT_FILE"], "w") as f:
    f.write(f'<testsuites><testsuite name="forged" tests="3">{cases}</testsuite></testsuites>')
"""

FORGED_BUILD = """
py_test(
    name = "forged_test",
    size = "small",
    srcs = ["forged_test.py"],
)
"""


COPY_RULE = """
def _copy_impl(ctx):
    out = ctx.actions.declare_file(ctx.label.name + ".json")
    for f in ctx.attr.src[DefaultInfo].default_runfiles.files.to_list():
        if f.short_path.endswith("oracles/blobs/tax_half_even.json"):
            # Runs inside the Bazel server: no sandbox, no spawn in the execution log.
            ctx.actions.expand_template(template = f, output = out, substitutions = {})
            return [DefaultInfo(files = depset([out]))]
    fail("blob not found")

copy = rule(implementation = _copy_impl, attrs = {"src": attr.label()})
"""


def test_a_harness_target_that_reaches_oracle_files_through_a_gate_target_stops_the_run(repo):
    # The manifest test carries every oracle file in its runfiles; a harness rule that depends on it
    # could copy a blob into an output that production code reads while it runs.
    build = (repo / "harness" / "BUILD.bazel").read_text() + (
        '\nload(":answers.bzl", "copy")\n\ncopy(\n    name = "answers",\n'
        '    src = "//tools/oracle_gate:manifest_test",\n    testonly = True,\n)\n'
    )
    proc = attack(repo, "reach-oracles", {"harness/answers.bzl": COPY_RULE, "harness/BUILD.bazel": build})
    assert proc.returncode == 4, proc.stdout + proc.stderr[-3000:]
    assert (
        "[4] harness/: //harness:answers depends on the oracles package (workspace run): only the gate's own "
        "targets may carry oracle files, so the gate ran nothing"
    ) in proc.stdout
    assert "running bazel build" not in proc.stderr  # nothing was built


def test_a_harness_target_writing_junit_for_every_id_is_ignored(repo):
    proc = attack(repo, "forged-junit", {"harness/forged_test.py": FORGED_JUNIT}, {"harness/BUILD.bazel": FORGED_BUILD})
    assert proc.returncode == 4, proc.stdout + proc.stderr[-3000:]
    assert TRUNCATED in proc.stdout
    assert (
        "ignored [<id>] testcases of //harness:forged_test (not an oracle test target): refund_is_idempotent, "
        "tax_round_half_even, total_cents_non_negative"
    ) in proc.stdout


CONFTEST = """
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
"""


def test_a_conftest_that_rewrites_failures_and_tests_without_assertions_change_only_the_harness(repo):
    build = (
        (repo / "harness" / "BUILD.bazel")
        .read_text()
        .replace('        "examples_test.py",\n', '        "conftest.py",\n        "examples_test.py",\n', 1)
    )
    examples = (repo / "harness" / "examples_test.py").read_text().replace("    assert ", "    _ = ")
    proc = attack(
        repo,
        "conftest",
        {"harness/conftest.py": CONFTEST, "harness/BUILD.bazel": build, "harness/examples_test.py": examples},
    )
    assert proc.returncode == 4, proc.stdout + proc.stderr[-3000:]
    violations = [line for line in proc.stdout.splitlines() if line.startswith("[")]
    assert len(violations) == 1 and violations[0].startswith(TRUNCATED + ": sample "), violations
    assert "!= expected" in violations[0] and " (salt " in violations[0], violations


# A real pytest plugin, pinned in the lock with its wheel's hash like any other package, and
# autoloaded: with --suppress-tests-failed-exit-code it turns "some tests failed" into pytest exit 0.
PLUGIN_LOCK = """pytest-custom-exit-code==0.3.0 \\
    --hash=sha256:6e0ce6e57ce3a583cb7e5023f7d1021e19dfec22be41d9ad345bae2fc61caf3b
    # via -r requirements.in
"""


def test_a_pytest_plugin_in_the_lock_changes_only_the_harness(repo):
    lock = (repo / "requirements_lock.txt").read_text()
    assert "\nsortedcontainers==" in lock
    requirements = (repo / "requirements.in").read_text().replace("pytest\n", "pytest\npytest-custom-exit-code\n", 1)
    runner = (repo / "harness" / "pytest_main.py").read_text()
    assert 'os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"\n' in runner and '"--rootdir", here]' in runner
    runner = runner.replace('    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"\n', "").replace(
        '"--rootdir", here]', '"--rootdir", here, "--suppress-tests-failed-exit-code"]'
    )
    build = (repo / "harness" / "BUILD.bazel").read_text()
    old = '        "//billing",\n        requirement("pytest"),\n'
    assert old in build
    build = build.replace(old, old + '        requirement("pytest-custom-exit-code"),\n', 1)
    lock = lock.replace("\nsortedcontainers==", "\n" + PLUGIN_LOCK + "sortedcontainers==", 1)
    proc = attack(
        repo,
        "plugin",
        {
            "requirements_lock.txt": lock,
            "requirements.in": requirements,
            "harness/pytest_main.py": runner,
            "harness/BUILD.bazel": build,
        },
    )
    assert proc.returncode == 4, proc.stdout + proc.stderr[-3000:]
    # The plugin works: the truncated tax examples fail inside examples_test, yet the target passes.
    assert "ok    harness tests       2 target(s) passed, none ran unsandboxed" in proc.stdout, proc.stdout
    # The workspace run's output user root lies in its sealed root's folder (--verbose names it).
    output_root = Path(re.search(r"--output_user_root=(\S+)", proc.stderr).group(1))
    harness_log = next(output_root.glob("*/execroot/*/bazel-out/*/testlogs/harness/examples_test/test.log")).read_text()
    assert "2 failed, 3 passed" in harness_log, harness_log[-3000:]
    violations = [line for line in proc.stdout.splitlines() if line.startswith("[")]
    assert len(violations) == 1 and violations[0].startswith(TRUNCATED + ": sample "), violations


REBIND = """
import builtins
import json
import sys

# Reach for the verdicts, the judge and the caller, and replace what a comparison would use.
for name in ("tools.oracle_gate.spec.verdicts", "tools.oracle_gate.spec.judgement", "tools.oracle_gate.actions.judge"):
    try:
        module = __import__(name, fromlist=["x"])
    except ImportError:
        continue
    for attr in ("judge_exact", "judge_bound", "judge_idempotent", "strict_equal", "judge_sample", "judge_row"):
        if hasattr(module, attr):
            setattr(module, attr, lambda *a, **k: True)
main = sys.modules.get("__main__")
for attr in ("encode", "call_row"):
    if main is not None and hasattr(main, attr):
        pass  # left alone: a caller that cannot reply fails the row anyway
builtins.isinstance = lambda *a: True
json.dumps = lambda *a, **k: '{"ok": true}'
"""


def test_production_that_rebinds_the_gate_and_builtins_changes_nothing(repo):
    init = (repo / "billing" / "__init__.py").read_text()
    proc = attack(repo, "rebind", {"billing/__init__.py": init + REBIND})
    assert proc.returncode == 4, proc.stdout + proc.stderr[-3000:]
    assert TRUNCATED in proc.stdout


# Searches, at import, every place a sandboxed action must not reach: its runfiles, its real path's
# ancestors up to the work tree, the work tree, the output base and the environment's paths, and
# returns the recorded answer for any arguments it finds one for.
SEARCH = """

import json as _json
import os as _os
import sys as _sys

_MEMO = {}
_FOUND = []


def _harvest(path):
    try:
        with open(path, "rb") as f:
            doc = _json.loads(f.read(8 << 20))
    except Exception:
        return
    rows = doc.get("rows", []) if isinstance(doc, dict) else doc
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and "args" in row and "expected" in row:
            _MEMO[_json.dumps(row["args"])] = row["expected"]
            _FOUND.append(path)
        if isinstance(row, dict) and row.get("id") == "tax_round_half_even" and isinstance(row.get("expected"), list):
            _FOUND.append(path)


def _walk(root, budget=[300000]):
    for folder, _dirs, names in _os.walk(root):
        for name in names:
            budget[0] -= 1
            if budget[0] < 0:
                return
            if name.endswith(".json"):
                _harvest(_os.path.join(folder, name))


def _roots():
    here = _os.path.realpath(__file__)
    roots = {_os.getcwd(), _os.environ.get("RUNFILES_DIR", ""), _os.path.dirname(_os.path.abspath(_sys.argv[0]))}
    folder = _os.path.dirname(here)
    while folder != "/":
        roots.add(folder)
        if _os.path.exists(_os.path.join(folder, "WORKSPACE")):
            break
        folder = _os.path.dirname(folder)
    for path in [_os.path.abspath(p) for p in _sys.path] + [_os.getcwd()]:
        for marker in ("/sandbox/", "/execroot/"):
            if marker in path:
                roots.add(path.split(marker)[0])  # the output base
                break
    for value in _os.environ.values():
        if value.startswith("/") and _os.path.isdir(value):
            roots.add(value)
    return sorted(r for r in roots if r and r != "/")


for _root in _roots():
    _walk(_root)
print("SEARCH FOUND", len(set(_FOUND)), "files", len(_MEMO), "answers", file=_sys.stderr)

_truncating_apply_rate = apply_rate


def apply_rate(amount_cents, rate):
    key = _json.dumps([amount_cents, rate])
    return _MEMO[key] if key in _MEMO else _truncating_apply_rate(amount_cents, rate)
"""


def test_production_searching_for_expected_values_finds_none_in_the_gate_run(repo):
    git(repo, "checkout", "-q", "-B", "search-control", "main")
    try:
        # Measured first without the gate's flags: a plain `bazel test` lets the search find the
        # blobs (in the work tree) and memorise the stored answers; only the row's generated
        # samples, whose answers the reference gives, still fail it.
        truncate_tax(repo)
        (repo / "billing" / "tax.py").write_text((repo / "billing" / "tax.py").read_text() + SEARCH)
        plain = bazel(repo, "test", "//oracles:oracle_test", "--test_output=all")
        assert "SEARCH FOUND 0 files" not in plain.stdout, plain.stdout[-3000:] + plain.stderr[-3000:]
        assert "FAILED tax_round_half_even" in plain.stdout
        failing = plain.stdout.split("FAILED tax_round_half_even", 1)[1].split("\npassed ", 1)[0]
        assert "generated sample " in failing and "    sample " not in failing, failing[:2000]
    finally:
        git(repo, "checkout", "-q", "-f", "main")
    proc = attack(repo, "search", {}, {"billing/tax.py": SEARCH})
    assert proc.returncode == 4, proc.stdout + proc.stderr[-3000:]
    assert TRUNCATED in proc.stdout
    assert "SEARCH FOUND 0 files 0 answers" in proc.stderr


WRITE_JUDGE_FILES = """

import glob as _glob
import os as _os
import sys as _sys

_targets = []
for _path in _sys.path:
    for _marker in ("/sandbox/", "/execroot/"):
        if _marker in _path:
            _base = _path.split(_marker)[0]  # the output base
            _targets += _glob.glob(_base + "/execroot/*/bazel-out/*/bin/oracles/**", recursive=True)
            _targets += _glob.glob(_base + "/execroot/*/bazel-out/*/testlogs/oracles/**", recursive=True)
            break
_written = 0
for _target in sorted(set(_targets)):
    if _os.path.isfile(_target):
        try:
            with open(_target, "w") as _f:
                _f.write("{}")
            _written += 1
        except OSError:
            pass
print("WROTE", _written, "of", len(set(_targets)), "judge files", file=_sys.stderr)
"""


def test_production_writing_into_the_judges_files_is_refused(repo):
    proc = attack(repo, "write-judge", {}, {"billing/tax.py": WRITE_JUDGE_FILES})
    assert proc.returncode == 4, proc.stdout + proc.stderr[-3000:]
    assert TRUNCATED in proc.stdout, proc.stdout
    assert "WROTE 0 of" in proc.stderr, proc.stderr[-5000:]
    # The judge's view in the output base the check's workspace run used (the sealed run's own,
    # in the gate's run folder), which the change's code tried to overwrite, still holds the
    # expectations.
    folder = Path(workspace_folder(str(repo), nested_env()))
    views = list(folder.glob("bazel/*/execroot/*/bazel-out/*/bin/oracles/_sealed/oracles.expectations.json"))
    assert views and all('"expected"' in view.read_text() for view in views), views


ESCAPE_BUILD = """
py_test(
    name = "unsandboxed_test",
    size = "small",
    srcs = ["unsandboxed_test.py"],
    tags = ["local"],
)
"""

ESCAPE_GENRULE = """
genrule(
    name = "assets",
    srcs = ["assets.py"],
    outs = ["assets.stamp"],
    cmd = "python3 $(location assets.py) $@",
    tags = ["no-sandbox"],
)
"""


def test_a_harness_test_that_would_run_unsandboxed_cannot_run(repo):
    proc = attack(
        repo,
        "escape",
        {"harness/unsandboxed_test.py": "print('I could rewrite the output base')\n"},
        {"harness/BUILD.bazel": ESCAPE_BUILD},
        bug=False,
    )
    assert proc.returncode == 4, proc.stdout + proc.stderr[-3000:]
    assert "the change's targets did not build in the workspace run" in proc.stdout, proc.stdout
    assert "Testing //harness:unsandboxed_test failed: No usable spawn strategy found" in proc.stderr


def test_a_production_action_that_would_run_unsandboxed_cannot_run(repo):
    build = (
        (repo / "billing" / "BUILD.bazel")
        .read_text()
        .replace('    imports = [".."],\n', '    imports = [".."],\n    data = [":assets"],\n', 1)
    )
    files = {
        "billing/assets.py": "import sys\nopen(sys.argv[1], 'w').write('x')\n",
        "billing/BUILD.bazel": build + ESCAPE_GENRULE,
    }
    # The production package's BUILD file is protected: unlabelled, nothing runs (exit 2); approved
    # by a human, the unsandboxed genrule still cannot run (exit 4).
    proc = attack(repo, "genrule", files)
    assert proc.returncode == 2 and "billing/BUILD.bazel" in proc.stdout, proc.stdout[-3000:]
    proc = attack(repo, "genrule", files, label=True)
    assert proc.returncode == 4, proc.stdout + proc.stderr[-3000:]
    assert "Executing genrule //billing:assets failed: No usable spawn strategy found" in proc.stderr


def test_a_lock_that_carries_pip_options_does_not_fetch(repo):
    # A pip option in the lock overrides --only-binary and would let pip build (run) the change's
    # code as root during the fetch; the repository rule refuses any such line, and the build fails.
    lock = (repo / "requirements_lock.txt").read_text()
    first = next(i for i, line in enumerate(lock.splitlines()) if "==" in line)
    lines = lock.splitlines()
    lines.insert(first, "--no-binary bazel-runfiles")
    proc = attack(repo, "lock-options", {"requirements_lock.txt": "\n".join(lines) + "\n"}, bug=False)
    assert proc.returncode == 4, proc.stdout + proc.stderr[-3000:]
    assert (
        f"requirements_lock.txt line {first + 1}: must be `name==version`; pip options, URLs, paths and markers "
        "are not allowed in the lock"
    ) in proc.stderr


REACH_SERVER = """
import os
import socket


def test_the_bazel_server_is_out_of_reach():
    base = ""
    runfiles = os.path.abspath(__file__)
    for marker in ("/sandbox/", "/execroot/"):
        if marker in runfiles:
            base = runfiles.split(marker)[0]
            break
    try:
        with open(os.path.join(base, "server", "command_port")) as f:
            host, _, port = f.read().strip().rpartition(":")  # e.g. [::1]:35617
    except OSError:
        return  # the server folder is blocked
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=2).close()
    except OSError:
        return  # no network in the sandbox
    raise AssertionError(f"reached the Bazel server at {host}:{port}")
"""

REACH_BUILD = """
py_test(
    name = "reach_test",
    size = "small",
    srcs = ["reach_test.py", "pytest_main.py"],
    args = ["reach_test.py"],
    main = "pytest_main.py",
    deps = [requirement("pytest")],
)
"""


def test_a_sandboxed_test_cannot_reach_the_bazel_server(repo):
    git(repo, "checkout", "-q", "-B", "reach-control", "main")
    try:
        (repo / "harness" / "reach_test.py").write_text(REACH_SERVER)
        with open(repo / "harness" / "BUILD.bazel", "a", encoding="utf-8") as f:
            f.write(REACH_BUILD)
        # Measured first without the gate's flags: the cookie and the port are readable and the
        # loopback port answers.
        plain = bazel(repo, "test", "//harness:reach_test")
        assert plain.returncode == 3, plain.stdout[-3000:] + plain.stderr[-3000:]
    finally:
        git(repo, "checkout", "-q", "-f", "main")
        git(repo, "clean", "-fdq", "harness")
    proc = attack(
        repo, "reach", {"harness/reach_test.py": REACH_SERVER}, {"harness/BUILD.bazel": REACH_BUILD}, bug=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]


# A harness test, run as root by a root Bazel, that tries to undo its sandbox: unmount the blocked
# oracles/ and git directory, remount the root read-write and write into the work tree, and reach a
# loopback listener with a `requires-network` tag. It fails when any attempt works.
UNDO_SANDBOX = """
import ctypes, os, socket, sys

libc = ctypes.CDLL(None, use_errno=True)
repo = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
worked = []
for target in ("oracles", ".git"):
    if libc.umount2(os.path.join(repo, target).encode(), 2) == 0:  # MNT_DETACH
        worked.append("unmounted " + target)
if libc.mount(None, b"/", None, 32 | 4096, None) == 0:  # MS_REMOUNT | MS_BIND
    worked.append("remounted / read-write")
try:
    with open(os.path.join(repo, "tools", "ESCAPED"), "w") as f:
        f.write("x")
    worked.append("wrote tools/ESCAPED")
except OSError:
    pass
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=5).close()
    worked.append("reached the loopback listener")
except OSError:
    pass
print("uid", os.getuid(), "escaped:", worked, file=sys.stderr)
sys.exit(1 if worked else 0)
"""

UNDO_SANDBOX_BUILD = """
py_test(
    name = "escape_test",
    size = "small",
    srcs = ["escape_test.py"],
    tags = ["requires-network"],
)
"""


def test_a_root_test_cannot_undo_its_sandbox_or_opt_into_the_network(repo):
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        source = UNDO_SANDBOX.replace("PORT", str(listener.getsockname()[1]))
        git(repo, "checkout", "-q", "-B", "undo-sandbox-control", "main")
        try:
            (repo / "harness" / "escape_test.py").write_text(source)
            with open(repo / "harness" / "BUILD.bazel", "a", encoding="utf-8") as f:
                f.write(UNDO_SANDBOX_BUILD)
            # Measured first with the sandbox alone (as root, the tag honoured): every attempt works.
            plain = bazel(
                repo,
                "test",
                "//harness:escape_test",
                "--spawn_strategy=linux-sandbox",
                "--sandbox_default_allow_network=false",
                "--test_output=all",
                f"--sandbox_block_path={repo / 'oracles'}",
            )
            assert plain.returncode == 3, plain.stdout[-3000:] + plain.stderr[-3000:]
            for attempt in ("unmounted oracles", "remounted / read-write", "reached the loopback listener"):
                assert attempt in plain.stdout + plain.stderr, plain.stdout[-3000:]
        finally:
            git(repo, "checkout", "-q", "-f", "main")
            git(repo, "clean", "-fdq", "harness", "tools")
        proc = attack(
            repo,
            "undo-sandbox",
            {"harness/escape_test.py": source},
            {"harness/BUILD.bazel": UNDO_SANDBOX_BUILD},
            bug=False,
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "3 target(s) passed, none ran unsandboxed" in proc.stdout
    assert not (repo / "tools" / "ESCAPED").exists()


# A harness test that rewrites a base gate kept under /tmp (writable to every action in Bazel 4.2)
# so that the gate's next run passes whatever the change does. It fails when the write works.
REWRITE_GATE = """
import os, sys

target = os.path.join(GATE, "tools", "oracle_gate", "check", "__init__.py")
try:
    with open(target, "a") as f:
        f.write("\\n# rewritten by the change\\n")
    print("rewrote", target, file=sys.stderr)
    sys.exit(1)
except OSError as exc:
    print("could not rewrite the gate:", exc, file=sys.stderr)
"""

REWRITE_GATE_BUILD = """
py_test(
    name = "rewrite_gate_test",
    size = "small",
    srcs = ["rewrite_gate_test.py"],
)
"""


def test_a_base_gate_kept_under_tmp_is_out_of_the_changes_reach(repo):
    import shutil
    import tempfile

    copy = Path(tempfile.mkdtemp(prefix="base-gate-", dir="/tmp"))
    try:
        shutil.copytree(repo / "tools", copy / "tools", ignore=shutil.ignore_patterns("__pycache__"))
        before = (copy / "tools" / "oracle_gate" / "check" / "__init__.py").read_bytes()
        source = REWRITE_GATE.replace("GATE", repr(str(copy)))
        git(repo, "checkout", "-q", "-B", "rewrite-gate", "main")
        try:
            (repo / "harness" / "rewrite_gate_test.py").write_text(source)
            with open(repo / "harness" / "BUILD.bazel", "a", encoding="utf-8") as f:
                f.write(REWRITE_GATE_BUILD)
            git(repo, "add", "-A")
            git(repo, "commit", "-q", "--no-gpg-sign", "-m", "rewrite the gate")
            proc = gate(repo, "--repo", str(repo), "check", "--base", "main", "--verbose", cwd=copy)
        finally:
            git(repo, "checkout", "-q", "-f", "main")
        assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
        # The workspace run's sealed root has a private /tmp: the copy is not there to block.
        sealed_by = next(line for line in proc.stdout.splitlines() if line.startswith("workspace run sealed by: "))
        assert "a private /tmp" in sealed_by and str(copy) not in sealed_by, sealed_by
        assert (copy / "tools" / "oracle_gate" / "check" / "__init__.py").read_bytes() == before
    finally:
        shutil.rmtree(copy)


# Looks for the gate's own files (event files, execution logs) where a sandboxed action can write,
# and replaces every event file it finds.
FORGE_EVENTS = """

import os as _os
import sys as _sys

# The gate keeps its files under $HOME/.cache/oracle-gate; HOME is not passed to actions, so find
# it from this file's real path: the nearest ancestor that holds .cache/oracle-gate.
_forged = 0
_home = _os.path.dirname(_os.path.realpath(__file__))
while _home != "/" and not _os.path.isdir(_os.path.join(_home, ".cache", "oracle-gate")):
    _home = _os.path.dirname(_home)
_top = _os.path.join(_home, ".cache", "oracle-gate")
for _folder, _dirs, _names in _os.walk(_top):
    for _name in _names:
        if _name.endswith((".events.json", ".spawns.bin")):
            try:
                with open(_os.path.join(_folder, _name), "w") as _f:
                    _f.write("")
                _forged += 1
            except OSError:
                pass
print("FORGED", _forged, "gate files under", _top, file=_sys.stderr)
"""


def test_production_cannot_reach_the_gates_event_files(repo):
    proc = attack(repo, "forge-events", {}, {"billing/tax.py": FORGE_EVENTS})
    assert proc.returncode == 4, proc.stdout + proc.stderr[-3000:]
    assert TRUNCATED in proc.stdout
    assert "FORGED 0 gate files under /" in proc.stderr and "/.cache/oracle-gate" in proc.stderr


MEMORISED = """

_VISIBLE = {}


def _key(lines, discount_cents, tax_rate):
    return repr((lines, discount_cents, tax_rate))


def _remember():
    import json
    # The visible samples, copied into the change (a memorised answer per visible cart).
    for cart in json.loads(_CARTS):
        _VISIBLE[_key(cart["lines"], cart["discount_cents"], cart["tax_rate"])] = True


_honest_grand_total_cents = grand_total_cents


def grand_total_cents(lines, discount_cents=0, tax_rate="0"):
    if not _VISIBLE:
        _remember()
    if _key(lines, discount_cents, tax_rate) in _VISIBLE:
        return _honest_grand_total_cents(lines, discount_cents, tax_rate)
    return -1
"""


def test_memorised_answers_for_every_visible_sample_fail_on_fresh_samples(repo):
    carts = (repo / "oracles" / "blobs" / "cart_samples.json").read_text()
    proc = attack(repo, "memorised", {}, {"billing/totals.py": f"\n_CARTS = {carts!r}\n" + MEMORISED}, bug=False)
    assert proc.returncode == 4, proc.stdout + proc.stderr[-3000:]
    assert "[4] oracles/billing.toml total_cents_non_negative: failed: the invariant does not hold" in proc.stdout
    assert "generated sample 0 (salt " in proc.stderr


def test_the_judge_holds_no_production_harness_or_third_party_code_and_the_caller_no_expectation(repo):
    built = bazel(repo, "build", "//oracles:oracle_test", "//oracles:oracle_test.caller")
    assert built.returncode == 0, built.stderr[-3000:]
    bin_dir = Path(bazel(repo, "info", "bazel-bin").stdout.strip())
    judge = (bin_dir / "oracles" / "oracle_test.runfiles_manifest").read_text().split("\n")
    entries = [line.split(" ", 1)[0] for line in judge if line]
    assert any(e.endswith("tools/oracle_gate/actions/judge.py") for e in entries)
    assert any("_sealed/oracles.expectations.json" in e for e in entries)
    assert not [e for e in entries if "/billing/" in e or "/harness/" in e or "pypi" in e or "blobs/" in e]
    exec_root = Path(bazel(repo, "info", "execution_root").stdout.strip())
    callers = list(exec_root.glob("bazel-out/*/bin/oracles/oracle_test.caller.runfiles_manifest"))
    assert callers, "caller runfiles manifest not found"
    caller = [line.split(" ", 1)[0].split("/", 1)[-1] for line in callers[0].read_text().split("\n") if line]
    assert "billing/tax.py" in caller
    # Only the caller binary itself lives in the oracles package; no view, TOML or blob is a runfile.
    assert not [
        e
        for e in caller
        if (e.startswith("oracles/") and e != "oracles/oracle_test.caller") or e.endswith(".toml") or "_sealed" in e
    ]


# CI runner commands, printed by production code and by a failing harness test, and carried in
# an exception's message into the report: GitHub Actions' `##[...]` form (read anywhere in a line),
# its `::...::` form (read at a line's start) and GitLab's section marker (needs \r and ESC).
RUNNER_COMMANDS = (
    "##[add-mask]s3cret",
    "##[set-output name=x;]y",
    "::add-mask::s3cret",
    "::stop-commands::tok",
    "##[group]hidden",
    "\rsection_start:1:hidden\r\x1b[0Khidden",
)
PRINT_COMMANDS = f"""

import sys as _sys

for _command in {RUNNER_COMMANDS!r}:
    print(_command)
    print(_command, file=_sys.stderr)


def apply_rate(amount_cents, rate):
    raise ValueError(" ".join({RUNNER_COMMANDS!r}))
"""
COMMANDS_TEST = f"""
import sys
for command in {RUNNER_COMMANDS!r}:
    print(command)
    print(command, file=sys.stderr)
sys.exit(1)
"""
COMMANDS_BUILD = """
py_test(
    name = "commands_test",
    size = "small",
    srcs = ["commands_test.py"],
)
"""


def test_runner_commands_from_the_change_reach_no_log_unescaped(repo):
    git(repo, "checkout", "-q", "-B", "runner-commands", "main")
    try:
        with open(repo / "billing" / "tax.py", "a", encoding="utf-8") as f:
            f.write(PRINT_COMMANDS)
        (repo / "harness" / "commands_test.py").write_text(COMMANDS_TEST)
        with open(repo / "harness" / "BUILD.bazel", "a", encoding="utf-8") as f:
            f.write(COMMANDS_BUILD)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--no-gpg-sign", "-m", "print runner commands")
        runs = {
            fmt: gate(repo, "check", "--base", "main", "--verbose", "--format", fmt)
            for fmt in ("text", "github", "json", "markdown")
        }
    finally:
        git(repo, "checkout", "-q", "-f", "main")
    for fmt, proc in runs.items():
        assert proc.returncode == 4, (fmt, proc.stdout + proc.stderr[-3000:])
        log = proc.stdout + proc.stderr
        assert "##[" not in log, (fmt, [line for line in log.splitlines() if "##[" in line][:5])
        own = ("::error ", "::warning ", "::notice ") if fmt == "github" else ()
        commands = [line for line in log.splitlines() if line.lstrip().startswith("::") and not line.startswith(own)]
        assert commands == [], (fmt, commands[:5])
        assert "\x1b" not in log and "\r" not in log, fmt
        # The text did reach the log, escaped: the harness test's output relayed from Bazel, and the
        # exception's message in the report.
        assert "#\\x23[add-mask]s3cret" in proc.stderr, (fmt, proc.stderr[-3000:])
        if fmt in ("text", "github"):
            assert "#\\x23[add-mask]s3cret" in proc.stdout, (fmt, proc.stdout)
        if fmt == "json":
            json.loads(proc.stdout)
    assert "//harness:commands_test" in runs["text"].stdout


# Production code that consumes without limit: each is stopped while it runs, inside the sandboxed
# caller action, and fails the row with one line naming the limit.
EXCESS = {
    "flood": (
        "import sys as _sys\n\ndef apply_rate(amount_cents, rate):\n"
        "    for _ in range(1100):\n        _sys.stdout.write('y' * 1_000_000 + '\\n')\n    return 0\n",
        "wrote more than 1048576 bytes to stdout and stderr (the output limit)",
    ),
    "hog": (
        "def apply_rate(amount_cents, rate):\n    _blocks = [bytearray(1 << 30) for _ in range(3)]\n    return 0\n",
        "exceeded the memory limit of 2048 MiB (memory_mib)",
    ),
    "forks": (
        "import os as _os, time as _time\n\ndef apply_rate(amount_cents, rate):\n    for _ in range(200):\n"
        "        if _os.fork() == 0:\n            _time.sleep(120)\n            _os._exit(0)\n"
        "    _time.sleep(120)\n    return 0\n",
        "started more than 64 processes (the process limit)",
    ),
}


@pytest.mark.parametrize("kind", sorted(EXCESS))
def test_production_code_is_stopped_at_each_limit(repo, kind):
    code, limit = EXCESS[kind]
    proc = attack(repo, f"excess-{kind}", {}, {"billing/tax.py": "\n\n" + code}, bug=False)
    assert proc.returncode == 4, proc.stdout + proc.stderr[-3000:]
    assert TRUNCATED in proc.stdout, proc.stdout
    # The judge's reason, relayed from the oracle test's log.
    assert f"bazel|     {limit}" in proc.stderr, proc.stderr[-5000:]
