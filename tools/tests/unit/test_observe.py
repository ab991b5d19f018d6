"""The caller runs production code in its own process: crashes, hangs, forged messages and
rebinding fail the row, never the judge, and never turn a wrong answer into a pass."""

from __future__ import annotations

import os
import subprocess
import sys

from tools.testing.rowrun import TABLE, TABLE_BLOB, calc, run_rows

WRONG_ADD = "def add(a, b): return a * b\n"
ROWS = TABLE + [{"id": "second_table", "entry": "shop.calc:add", "kind": "exact_table", "blob": "oracles/blobs/t.json"}]


def test_a_crash_fails_the_row_and_a_fresh_caller_serves_the_next(tmp_path):
    body = """
        import os
        CALLS = []
        def add(a, b):
            CALLS.append(1)
            if a == 1:
                os._exit(3)
            return a + b
    """
    result = run_rows(tmp_path, ROWS, TABLE_BLOB, calc(body))
    assert result.judged["add_table"].reasons == ["the caller exited with code 3 before replying"]
    assert result.judged["second_table"].reasons == ["the caller exited with code 3 before replying"]


def test_a_hang_past_timeout_s_fails_the_row(tmp_path):
    rows = [dict(TABLE[0], timeout_s=1), dict(ROWS[1], entry="shop.calc:fine")]
    body = """
        import time
        def add(a, b):
            time.sleep(600)
        def fine(a, b):
            return a + b
    """
    result = run_rows(tmp_path, rows, TABLE_BLOB, calc(body))
    assert result.judged["add_table"].reasons == ["timed out after 1 s (the row's timeout_s)"]
    assert result.judged["second_table"].ok


def test_raising_and_exiting_are_failed_samples(tmp_path):
    body = """
        import sys
        def add(a, b):
            if a == 1:
                raise ValueError("no")
            sys.exit(0)
    """
    result = run_rows(tmp_path, TABLE, TABLE_BLOB, calc(body))
    assert result.judged["add_table"].reasons == [
        "sample 0 (0-based): raised ValueError: no",
        "sample 1 (0-based): raised SystemExit: 0",
    ]


def test_an_entry_that_cannot_be_imported_fails_its_row(tmp_path):
    result = run_rows(tmp_path, TABLE, TABLE_BLOB, {"shop/__init__.py": "", "shop/calc.py": "raise ImportError('x')\n"})
    assert result.judged["add_table"].reasons == ["cannot load entry shop.calc:add: ImportError: x"]


def test_a_package_that_raised_on_import_fails_every_row_that_names_it(tmp_path):
    # The package imports its submodule, then raises: the submodule stays in sys.modules, where a
    # caller that served the first row would find it for the second.
    files = {
        "shop/__init__.py": "from . import calc\nraise ImportError('x')\n",
        "shop/calc.py": "def add(a, b): return a + b\n",
    }
    result = run_rows(tmp_path, ROWS, TABLE_BLOB, files)
    for ident in ("add_table", "second_table"):
        assert result.judged[ident].reasons == ["cannot load entry shop.calc:add: ImportError: x"], ident


def test_the_supervisor_and_the_caller_name_a_load_error_alike():
    from tools.oracle_gate.actions import caller, observe

    assert caller.LOAD_ERROR == observe.LOAD_ERROR
    assert observe._load_failed('{"id": "r", "error": "cannot load entry m:f: ImportError: x"}')
    assert not observe._load_failed('{"id": "r", "results": []}')
    assert not observe._load_failed("not json")


def test_rebinding_the_gate_and_the_caller_changes_nothing(tmp_path):
    # Production code tries to reach the verdict functions and the caller's own helpers.
    body = (
        WRONG_ADD
        + """
import sys
try:
    import tools.oracle_gate.spec.verdicts as v
    v.judge_exact = lambda *a: v.Verdict(True)
    v.strict_equal = lambda *a: True
except ImportError:
    pass
main = sys.modules["__main__"]
if hasattr(main, "encode"):
    main.encode = lambda value, *a, **k: "3"
"""
    )
    result = run_rows(tmp_path, TABLE, TABLE_BLOB, calc(body))
    # Whatever the rebinding makes the caller send, the judge compares with the expected values it
    # alone holds, in its own process.
    assert not result.judged["add_table"].ok
    assert len(result.judged["add_table"].reasons) == 2


def test_replacing_builtins_and_json_does_not_forge_a_pass(tmp_path):
    body = (
        WRONG_ADD
        + """
import builtins, json
builtins.isinstance = lambda *a: True
builtins.type = lambda *a: int
json.dumps = lambda *a, **k: '{"id": "add_table", "results": []}'
json.loads = lambda *a, **k: {}
"""
    )
    result = run_rows(tmp_path, TABLE, TABLE_BLOB, calc(body))
    assert not result.judged["add_table"].ok


def test_forged_replies_on_the_channel_are_results_or_malformed(tmp_path):
    # Writes a forged "verdict" line to every descriptor it can find, then a correct-looking reply
    # for the wrong id, before the real reply.
    body = (
        WRONG_ADD
        + """
import os
for fd in range(3, 64):
    try:
        os.write(fd, b'{"id": "add_table", "verdict": "passed", "ok": true}\\n')
    except OSError:
        pass
"""
    )
    result = run_rows(tmp_path, ROWS, TABLE_BLOB, calc(body))
    assert not result.judged["add_table"].ok
    assert not result.judged["second_table"].ok
    assert result.judged["add_table"].reasons[0].startswith("malformed reply")


def test_production_output_goes_to_the_caller_log(tmp_path):
    body = (
        "import sys\ndef add(a, b):\n    print('from stdout')\n    print('from "
        "stderr', file=sys.stderr)\n    return a + b\n"
    )
    result = run_rows(tmp_path, TABLE, TABLE_BLOB, calc(body))
    assert result.judged["add_table"].ok
    assert "from stdout" in result.log and "from stderr" in result.log


def test_the_caller_never_receives_a_bound_or_an_expected_value(tmp_path):
    body = """
        import json, os, sys
        SEEN = []
        def add(a, b):
            SEEN.append([a, b])
            print("ARGS", json.dumps(SEEN[-1]))
            print("ENV", json.dumps(dict(os.environ)))
            return a + b
    """
    result = run_rows(tmp_path, TABLE, TABLE_BLOB, calc(body))
    request_text = (tmp_path / "views" / "inputs.json").read_text()
    assert '"expected"' not in request_text and '"min"' not in request_text and '"max"' not in request_text
    assert "ARGS [1, 2]" in result.log and "ARGS [2, 2]" in result.log


# Limits (docs/design.md section 8, "Limits"): each fails its row with one line naming the limit,
# while it is reached, and the next row gets a fresh caller.
NEXT = dict(ROWS[1], entry="shop.calc:fine")
FINE = """
        def fine(a, b):
            return a + b
"""


def test_an_output_flood_is_stopped_at_the_output_limit_while_it_is_written(tmp_path):
    body = (
        """
        import sys
        def add(a, b):
            for _ in range(1000):
                sys.stdout.write("y" * 1_000_000 + "\\n")
            return a + b
    """
        + FINE
    )
    result = run_rows(tmp_path, [TABLE[0], NEXT], TABLE_BLOB, calc(body))
    assert result.judged["add_table"].reasons == [
        "wrote more than 1048576 bytes to stdout and stderr (the output limit)"
    ]
    assert result.judged["second_table"].ok
    assert (tmp_path / "views" / "caller.log").stat().st_size < (1 << 20) + 200
    assert "--- oracle-gate: caller log cut at 1048576 bytes" in result.log


def test_memory_past_memory_mib_fails_the_row_and_a_row_may_raise_it(tmp_path):
    body = (
        """
        def add(a, b):
            block = bytearray(600 << 20)
            return a + b + len(block) - len(block)
    """
        + FINE
    )
    low = run_rows(tmp_path / "low", [dict(TABLE[0], memory_mib=512), NEXT], TABLE_BLOB, calc(body))
    assert low.judged["add_table"].reasons == ["exceeded the memory limit of 512 MiB (memory_mib)"]
    assert low.judged["second_table"].ok
    high = run_rows(tmp_path / "high", [dict(TABLE[0], memory_mib=1024)], TABLE_BLOB, calc(body))
    assert high.judged["add_table"].ok, high.judged["add_table"].reasons


def test_a_fork_storm_fails_the_row_at_the_process_limit(tmp_path):
    body = (
        """
        import os, time
        def add(a, b):
            for _ in range(200):
                if os.fork() == 0:
                    time.sleep(60)
                    os._exit(0)
            time.sleep(60)
            return a + b
    """
        + FINE
    )
    result = run_rows(tmp_path, [dict(TABLE[0], timeout_s=30), NEXT], TABLE_BLOB, calc(body))
    assert result.judged["add_table"].reasons == ["started more than 64 processes (the process limit)"]
    assert result.judged["second_table"].ok


def test_a_file_past_the_size_limit_and_too_many_open_files_fail_the_row(tmp_path):
    body = (
        f"""
        import os
        def add(a, b):
            with open({str(tmp_path / "big")!r}, "wb") as f:
                for _ in range(100):
                    f.write(b"z" * (1 << 20))
            return a + b
        def opens(a, b):
            return len([open(os.devnull) for _ in range(300)])
    """
        + FINE
    )
    rows = [TABLE[0], dict(NEXT, id="opens_table", entry="shop.calc:opens"), dict(NEXT, id="third_table")]
    result = run_rows(tmp_path, rows, TABLE_BLOB, calc(body))
    assert result.judged["add_table"].reasons == ["wrote a file past the file size limit of 67108864 bytes"]
    assert (tmp_path / "big").stat().st_size <= 64 << 20
    assert result.judged["opens_table"].reasons == ["could not open a file: the open-file limit of 256"]
    assert result.judged["third_table"].ok


# A startup hook on the production code's path (a `py_library` with `imports = [...]` puts any folder
# there): Python's `site` would import it before the caller imports anything, and it could swap a
# correct function in for the broken one the change ships.
SITECUSTOMIZE = """
import shop.calc
shop.calc.add = lambda a, b: a + b
"""


def test_a_sitecustomize_or_usercustomize_on_the_path_never_runs_before_production_code(tmp_path):
    for name in ("sitecustomize.py", "usercustomize.py"):
        result = run_rows(tmp_path / name, TABLE, TABLE_BLOB, {**calc(WRONG_ADD), name: SITECUSTOMIZE})
        assert not result.judged["add_table"].ok, name


# The coverage record (docs/design.md section 12) travels with the observations, and decides nothing.

COVERED = """
def add(a, b):
    return _plus(a, b)
def _plus(a, b):
    return a + b
def untouched(a, b):
    return 0
"""


def test_the_record_of_what_ran_reaches_the_judgement(tmp_path):
    result = run_rows(tmp_path, TABLE, TABLE_BLOB, calc(COVERED), packages=["shop"])
    judged = result.judged["add_table"]
    assert judged.ok and judged.ran == ("shop.calc:_plus", "shop.calc:add")
    # The request named the policy's packages, from the inputs view.
    assert "ran" in result.observations["rows"][0]["reply"]


def test_without_the_policys_packages_the_entries_packages_are_recorded(tmp_path):
    assert run_rows(tmp_path, TABLE, TABLE_BLOB, calc(COVERED)).judged["add_table"].ran == (
        "shop.calc:_plus",
        "shop.calc:add",
    )
    assert run_rows(tmp_path, TABLE, TABLE_BLOB, calc(COVERED), packages=["other"]).judged["add_table"].ran == ()


def test_the_record_never_changes_a_verdict_or_a_digest(tmp_path):
    recorded = run_rows(tmp_path, TABLE, TABLE_BLOB, calc(COVERED), packages=["shop"]).judged["add_table"]
    plain = run_rows(tmp_path, TABLE, TABLE_BLOB, calc(COVERED), packages=[]).judged["add_table"]
    assert (recorded.ok, recorded.digest, recorded.sample_digests) == (plain.ok, plain.digest, plain.sample_digests)
    assert plain.ran == ()


def test_a_forged_record_claims_coverage_but_never_a_pass(tmp_path):
    # Production code rewrites the caller's record to claim every function ran: the record is
    # untrusted (it may only add a note or a failure), so the wrong answer still fails, with the
    # digest of its results alone.
    forged = (
        WRONG_ADD
        + """
import sys
main = sys.modules["__main__"]
if hasattr(main, "ran_names"):
    main.ran_names = lambda seen, packages: ["shop.calc:add", "shop.calc:everything"]
"""
    )
    judged = run_rows(tmp_path, TABLE, TABLE_BLOB, calc(forged), packages=["shop"]).judged["add_table"]
    honest = run_rows(tmp_path, TABLE, TABLE_BLOB, calc(WRONG_ADD), packages=["shop"]).judged["add_table"]
    assert judged.ran == ("shop.calc:add", "shop.calc:everything")
    assert not judged.ok and (judged.digest, judged.reasons) == (honest.digest, honest.reasons)


def test_record_packages_prefers_the_views_packages():
    from tools.oracle_gate.actions.observe import record_packages

    rows = [{"entry": "shop.calc:add"}, {"entry": "other.x:f"}, {"entry": "shop:g"}]
    assert record_packages({"rows": rows}) == ["other", "shop"]
    assert record_packages({"rows": rows, "production_packages": ["shop", "more"]}) == ["more", "shop"]


def test_a_daemon_that_leaves_the_callers_session_neither_outlives_it_nor_rewrites_the_observations(tmp_path):
    # A double fork and `setsid` take the daemon out of the caller's process group and session;
    # it waits for the observations to be written, to replace them.
    marks = tmp_path / "marks"
    marks.mkdir()
    out = tmp_path / "views" / "observations.json"
    body = f"""
        import os, time
        def _daemon():
            if os.fork():
                return
            os.setsid()
            if os.fork():
                os._exit(0)
            with open({str(marks / "pid.tmp")!r}, "w") as f:
                f.write(str(os.getpid()))
            os.rename({str(marks / "pid.tmp")!r}, {str(marks / "pid")!r})
            for _ in range(3000):
                if os.path.exists({str(out)!r}):
                    with open({str(out)!r}, "w") as f:
                        f.write("forged")
                    open({str(marks / "rewrote")!r}, "w").close()
                    break
                time.sleep(0.01)
            time.sleep(60)
            os._exit(0)
        _daemon()
        def add(a, b):
            for _ in range(1000):
                if os.path.exists({str(marks / "pid")!r}):
                    break
                time.sleep(0.01)
            return a * b
    """
    result = run_rows(tmp_path, TABLE, TABLE_BLOB, calc(body))
    assert result.judged["add_table"].reasons == ["sample 0 (0-based): result 2 != expected 3"]
    assert not (marks / "rewrote").exists()
    pid = int((marks / "pid").read_text())
    assert not os.path.exists(f"/proc/{pid}"), "the daemon outlived the supervisor"


def test_the_supervisor_is_its_descendants_reaper_and_not_dumpable():
    code = (
        "import ctypes, sys; sys.path.insert(0, sys.argv[1]); import observe; "
        "assert observe.seal_supervisor() == ''; libc = ctypes.CDLL(None); "
        "flag = ctypes.c_int(0); libc.prctl(37, ctypes.byref(flag), 0, 0, 0); "
        "print(libc.prctl(3, 0, 0, 0, 0), flag.value)"
    )
    actions = os.path.join(os.path.dirname(__file__), "..", "..", "oracle_gate", "actions")
    proc = subprocess.run([sys.executable, "-S", "-c", code, actions], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "1"]  # PR_GET_DUMPABLE, PR_GET_CHILD_SUBREAPER


def test_a_reply_nested_past_the_parser_is_no_load_failure_and_no_crash():
    from tools.oracle_gate.actions import observe as observe_module

    assert observe_module._load_failed('{"id":"x","results":' + "[" * 200_000) is False
