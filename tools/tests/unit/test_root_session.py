"""Unit tests of runs/root_session.py: one shell runs the commands in order, with their own
environment, output and exit code, and ends with its input (a root that wraps nothing stands in
for bubblewrap here; the e2e clean-run tests use the real one)."""

from __future__ import annotations

import os

import pytest

from tools.oracle_gate.errors import GateError, TakenError
from tools.oracle_gate.runs.root_session import RootSession


class Unwrapped:
    """A sealed root that runs the command as it is."""

    def wrap(self, argv, _cwd):
        return list(argv)


def session(tmp_path):
    return RootSession(Unwrapped(), str(tmp_path), {"PATH": "/usr/bin:/bin", "KEPT": "k"}, str(tmp_path))


def test_commands_run_in_order_in_one_shell_with_their_own_output_and_code(tmp_path):
    with session(tmp_path) as s:
        first = s.run(["sh", "-c", "echo out $KEPT $ADDED; echo err >&2; exit 3"], {"ADDED": "a b"})
        second = s.run(["sh", "-c", "echo $PPID; pwd"])
        third = s.run(["sh", "-c", "echo $PPID"])
        assert s._ends.alive()  # one shell, still there between commands
    assert (first.returncode, first.stdout, first.stderr) == (3, "out k a b\n", "err\n")
    assert (second.returncode, second.stdout.split("\n")[1]) == (0, str(tmp_path))
    assert second.stdout.split("\n")[0] == third.stdout.strip()  # the same shell ran both
    assert not s._ends.alive()  # ended with its input
    assert os.listdir(tmp_path) == []  # its folder and output files removed


def test_stream_yields_lines_as_they_come_and_then_the_code(tmp_path):
    with session(tmp_path) as s:
        lines, code = s.stream(
            ["sh", "-c", "printf 'a\\nb'; sleep 0.3; printf '\\nc\\n'; echo e >&2; printf z; exit 1"], {"TMPDIR": "/x"}
        )
        assert code == []  # not known before the lines are read
        assert list(lines) == [b"a\n", b"b\n", b"c\n", b"e\n", b"z\n"]
        assert code == [1]
        after = s.run(["sh", "-c", "echo $TMPDIR"])
    assert after.stdout == "\n"  # the environment given to one command is not the next one's


def test_a_quote_or_newline_in_an_argument_is_one_argument(tmp_path):
    with session(tmp_path) as s:
        out = s.run(["printf", "%s|", "it's", "a\nb", "$HOME", "; exit 9"])
    assert (out.returncode, out.stdout) == (0, "it's|a\nb|$HOME|; exit 9|")


def test_a_stopped_shell_is_exit_1(tmp_path):
    s = session(tmp_path)
    os.kill(_shell_pid(s), 9)
    with pytest.raises(GateError):
        s.run(["true"])
    s.close()


def test_a_session_file_taken_while_a_command_runs_is_exit_4_not_an_internal_error(tmp_path):
    # What an output collected through a symlinked folder does to the file: moves it away.
    with session(tmp_path) as s:
        with pytest.raises(TakenError, match="went missing or was replaced while the change's code ran") as caught:
            s.run(["sh", "-c", f"mv {s.outputs}/command-1.out {tmp_path}/taken; echo done"])
        assert caught.value.code == 4
        lines, _ = s.stream(["sh", "-c", f"echo a; mv {s.outputs}/command-2.out {tmp_path}/taken2; sleep 0.3"])
        with pytest.raises(TakenError):
            list(lines)


def _shell_pid(s):
    return int(s.run(["sh", "-c", "echo $PPID"]).stdout)


def test_a_code_of_another_tag_is_skipped(tmp_path):
    # What an earlier check leaves in a kept root's pipe (kept_root.py): a code of its own tag.
    with session(tmp_path) as s:
        s._pending = b"7 0\n"
        assert s.run(["sh", "-c", "exit 5"]).returncode == 5
