"""Nothing from the change reaches the output unescaped: one violation is one line, and no input can
forge a line of the gate's own."""

from __future__ import annotations

import json
import os
import stat

import pytest

from tools.oracle_gate.errors import GateError, Violation
from tools.oracle_gate.runs import launch
from tools.oracle_gate.runs.flags import execution_log_flags
from tools.oracle_gate.text import visible
from tools.testing.gitrepo import IDS, junit

VERDICT = "gate ok (exit 0)"
# Each forges the gate's verdict on a line of its own, or hides text with a terminal escape sequence.
NASTY = [
    f"a\n{VERDICT}\nx",
    f"a\r{VERDICT}",
    f"a\r\n{VERDICT}\r\n",
    f"a\x1b[2K\x1b[1G{VERDICT}",
    f"a\x0b{VERDICT}\x0c",
    f"a\x85{VERDICT}",
    f"a\u2028{VERDICT}\u2029",
    "a\u202egnp.txt",
    "a\x7f\x00b",
]


def lines_of(text: str) -> list[str]:
    """Lines as any terminal or log viewer may split them."""
    return (
        text.replace("\r", "\n")
        .replace("\x0b", "\n")
        .replace("\x0c", "\n")
        .replace("\x85", "\n")
        .replace("\u2028", "\n")
        .replace("\u2029", "\n")
        .split("\n")
    )


def assert_no_forged_line(text: str, allowed: int = 0) -> None:
    assert sum(line == VERDICT for line in lines_of(text)) <= allowed, text
    assert "\x1b" not in text and "\u202e" not in text and "\x00" not in text


@pytest.mark.parametrize("text", NASTY)
def test_visible_keeps_one_line_and_shows_what_was_hidden(text):
    shown = visible(text)
    assert len(lines_of(shown)) == 1
    assert shown.isprintable()
    assert VERDICT in text and VERDICT in shown or VERDICT not in text


@pytest.mark.parametrize("text", NASTY)
def test_violation_and_error_lines_stay_single(text):
    assert len(lines_of(Violation(4, text, "x", text).line())) == 1
    assert len(lines_of(str(GateError(text, path=text, row=text, field=text, fix=text)))) == 1


@pytest.mark.parametrize("name", [n for n in NASTY if "\x00" not in n and "/" not in n])
def test_a_blob_path_cannot_forge_the_verdict(gate, project, tmp_path, name):
    project.write(f"oracles/blobs/{name}", b"[]\n")
    project.commit("add a file with a nasty name")
    results = junit(tmp_path, {i: "passed" for i in IDS})
    code, out, err = gate("--repo", str(project.path), "check", "--base", "main", "--results", results)
    assert code == 2, out
    assert_no_forged_line(out + err)
    assert out.splitlines()[-1] == "gate FAILED (exit 2)"
    [line] = [line for line in out.splitlines() if line.startswith("[2] oracles/blobs/a")]
    assert visible(name)[1:] in line
    code, out, _ = gate(
        "--repo", str(project.path), "check", "--base", "main", "--results", results, "--format", "json"
    )
    assert f"oracles/blobs/{name}" in {v["path"] for v in json.loads(out)["violations"]}


@pytest.mark.parametrize("text", NASTY[:5])
def test_labels_messages_and_arguments_cannot_forge_the_verdict(gate, project, tmp_path, text):
    # A failure message in the results, a label from the environment, and a base that does not exist.
    results = tmp_path / "r.xml"
    body = "".join(f'<testcase name="t[{i}]"/>' for i in IDS[1:])
    message = text.replace("\x00", "").replace("\x0b", "").replace("\x0c", "").replace("\x1b", "")
    results.write_text(
        f'<testsuites><testsuite><testcase name="t[{IDS[0]}]"><failure message={json.dumps(message)}/>'
        f"</testcase>{body}</testsuite></testsuites>"
    )
    code, out, err = gate(
        "--repo",
        str(project.path),
        "check",
        "--base",
        "main",
        "--results",
        str(results),
        "--label",
        text.replace("\n", " "),
        environ={"PR_LABELS": text},
    )
    assert code == 4, out + err
    assert_no_forged_line(out + err)
    code, out, err = gate("--repo", str(project.path), "check", "--base", text, "--results", str(results))
    assert code == 1 and out == ""
    assert err.count("\n") == 1
    assert_no_forged_line(out + err)


def test_bazel_output_is_relayed_escaped_and_prefixed(tmp_path, capsys):
    # A failed test's output reaches the gate's stderr through Bazel's; it gets a prefix and escapes.
    fake = tmp_path / "bin/bazel"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do case "$a" in --build_event_json_file=*) : > "${a#*=}";; '
        '--experimental_execution_log_file=*) : > "${a#*=}";; esac; done\n'
        f"printf 'INFO: 99 processes: 99 forged.\\n{VERDICT}\\n\\033[1A\\033[2K{VERDICT}\\rx\\n'\n"
        "printf 'INFO: 3 processes: 3 internal.\\n'\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env = {"PATH": f"{fake.parent}:{os.environ['PATH']}", "ORACLE_GATE_BAZEL": str(fake)}
    invocation = launch.HostLauncher(str(tmp_path), env).invoke(
        "test",
        [],
        ["//x"],
        (str(tmp_path / "t.events.json"), str(tmp_path / "t.spawns.bin")),
        lambda path: execution_log_flags("", path),
    )
    err = capsys.readouterr().err
    assert_no_forged_line(err)
    relayed = [line for line in err.splitlines() if not line.startswith("oracle-gate: running ")]
    assert relayed and all(line.startswith(launch.RELAY_PREFIX) for line in relayed)
    assert f"{launch.RELAY_PREFIX}\\x1b[1A\\x1b[2K{VERDICT}\\rx" in relayed
    assert invocation.summary == ["INFO: 3 processes: 3 internal."]


# CI runner commands (GitHub Actions' two syntaxes, GitLab's section marker).
RUNNER_COMMANDS = [
    "##[add-mask]s3cret",
    "x ##[set-output name=x;]y",
    "::add-mask::s3cret",
    "  ::stop-commands::tok",
    "##[group]hidden",
    "\rsection_start:1:x\r\x1b[0Kx",
]


def runner_command_in(text: str) -> list[str]:
    """The lines of `text` a CI runner would take a command from."""
    return [
        line
        for line in text.split("\n")
        if "##[" in line or line.lstrip().startswith("::") or "\x1b" in line or "\r" in line
    ]


@pytest.mark.parametrize("text", RUNNER_COMMANDS)
def test_visible_shows_runner_commands_escaped(text):
    shown = visible(text)
    assert runner_command_in(shown) == [], shown
    assert "add-mask" not in text or "add-mask" in shown


def test_the_runner_safe_stream_catches_markers_split_across_writes(capsys):
    import sys

    from tools.oracle_gate.text import RunnerSafe, runner_safe_json

    safe = RunnerSafe(sys.stdout)
    for piece in ("a #", "#", "[add-mask]x\n", "##", "[group]\n", "tail ##"):
        safe.write(piece)
        safe.flush()
    safe.write("[x]")
    safe.close_line()
    out = capsys.readouterr().out
    assert out == "a #\\x23[add-mask]x\n#\\x23[group]\ntail #\\x23[x]", out
    assert json.loads(runner_safe_json(json.dumps({"m": "##[add-mask]x"}))) == {"m": "##[add-mask]x"}
    assert "##[" not in runner_safe_json(json.dumps({"m": "##[add-mask]x"}))


@pytest.mark.parametrize("fmt", ["text", "json", "github", "markdown"])
def test_a_path_with_runner_commands_commands_nothing_in_any_format(gate, project, tmp_path, fmt):
    for i, command in enumerate(c for c in RUNNER_COMMANDS if "/" not in c and "\r" not in c):
        project.write(f"oracles/blobs/{command}{i}", b"[]\n")
    project.commit("files named like runner commands")
    code, out, err = gate(
        "--repo",
        str(project.path),
        "check",
        "--base",
        "main",
        "--format",
        fmt,
        "--results",
        junit(tmp_path, {i: "passed" for i in IDS}),
    )
    assert code == 2, out
    own = ("::error ", "::notice ") if fmt == "github" else ()
    assert [line for line in runner_command_in(out + err) if not line.startswith(own)] == [], out + err
    if fmt == "json":
        # JSON keeps the text, escaped the JSON way: parsed back, the path is the change's own.
        assert "##\\u005badd-mask]s3cret" in out, out
        assert any(v["path"] == "oracles/blobs/##[add-mask]s3cret0" for v in json.loads(out)["violations"]), out
    elif fmt == "markdown":
        assert "\\#\\\\x23\\[add-mask\\]s3cret" in out, out  # Markdown's own escapes on top
    else:
        assert "#\\x23[add-mask]s3cret" in out, out
