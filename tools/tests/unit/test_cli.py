"""CLI behaviour: usage errors, git problems and crashes exit 1 with one line, never a traceback."""

from __future__ import annotations

from tools.oracle_gate import cli


def test_usage_error_maps_to_1(gate):
    code, _, err = gate("check", "--format", "yaml")
    assert code == 1
    assert err.startswith("oracle-gate: [1] argument --format: invalid choice: 'yaml'")
    assert "Traceback" not in err


def test_no_command_is_a_usage_error(gate):
    code, _, err = gate()
    assert code == 1 and "the following arguments are required: command" in err


def test_not_a_git_repository(gate, tmp_path):
    code, _, err = gate("--repo", str(tmp_path), "check", "--base", "main", "--results", "x.xml")
    assert code == 1
    assert (
        err.strip()
        == f"oracle-gate: [1] {tmp_path} is not inside a git repository; run the gate in a clone or pass --repo DIR"
    )


def test_repo_that_does_not_exist(gate, tmp_path):
    code, _, err = gate("--repo", str(tmp_path / "nope"), "manifest", "--check")
    assert code == 1 and "is not a directory; pass --repo" in err


def test_unknown_base(gate, project):
    code, _, err = gate("--repo", str(project.path), "check", "--base", "no-such-branch", "--results", "x")
    assert code == 1
    assert err.strip() == (
        "oracle-gate: [1] base 'no-such-branch' is not a commit in this repository; "
        "fetch it first (e.g. `git fetch origin main`) or pass --base REV"
    )


def test_all_zero_base(gate, project):
    code, _, err = gate("--repo", str(project.path), "check", "--base", "0" * 40, "--results", "x")
    assert code == 1 and "does not name a commit" in err


def test_base_that_is_a_tree_not_a_commit(gate, project):
    tree = project.git("rev-parse", "HEAD^{tree}").strip()
    code, _, err = gate("--repo", str(project.path), "check", "--base", tree, "--results", "x")
    assert code == 1 and "is not a commit in this repository" in err


def test_default_base_is_main_without_origin(gate, project, tmp_path):
    from tools.testing.gitrepo import IDS, junit

    project.commit("nothing")
    code, out, _ = gate("--repo", str(project.path), "check", "--results", junit(tmp_path, {i: "passed" for i in IDS}))
    assert code == 0 and "base refs/heads/main (" in out


def test_missing_results_file(gate, project):
    code, _, err = gate("--repo", str(project.path), "check", "--base", "main", "--results", "/nonexistent.xml")
    assert code == 1
    assert "/nonexistent.xml: does not exist; pass a JUnit XML file or a Bazel test-log directory" in err


def test_malformed_results_file(gate, project, tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<testsuite><testcase")
    code, _, err = gate("--repo", str(project.path), "check", "--base", "main", "--results", str(bad))
    assert code == 1 and "is not well-formed JUnit XML" in err


def test_unexpected_exception_is_one_line_exit_1(gate, monkeypatch):
    def boom(*_a, **_k):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(cli.compare_cmd, "run", boom)
    code, _, err = gate("compare", "a", "b")
    assert code == 1
    assert err.strip() == "oracle-gate: [1] internal error: RuntimeError: kaboom (rerun with --debug for a traceback)"
    code, _, err = gate("--debug", "compare", "a", "b")
    assert code == 1 and "Traceback" in err


def test_bad_github_event_file(gate, project, tmp_path):
    event = tmp_path / "event.json"
    event.write_text("{not json")
    code, _, err = gate(
        "--repo",
        str(project.path),
        "check",
        "--base",
        "main",
        "--results",
        "x",
        environ={"GITHUB_EVENT_PATH": str(event)},
    )
    assert code == 1 and "cannot read the GitHub event file" in err


def test_repo_defaults_to_build_workspace_directory(gate, project):
    code, out, _ = gate("manifest", "--check", environ={"BUILD_WORKSPACE_DIRECTORY": str(project.path / "shop")})
    assert (code, out.strip()) == (0, "oracles/MANIFEST.sha256 is current")


def test_version_is_the_package_version(gate, capsys):
    from tools.oracle_gate import __version__

    try:
        gate("--version")
    except SystemExit as exc:
        assert exc.code == 0
    out = capsys.readouterr().out
    assert out == f"oracle_gate {__version__}\n"


def test_help_of_the_gate_and_of_check_ends_with_the_exit_codes(capsys):
    from tools.oracle_gate.errors import EXIT_CODES

    for argv in (["--help"], ["check", "--help"]):
        try:
            cli.main(argv, {})
        except SystemExit as exc:
            assert exc.code == 0
        out = capsys.readouterr().out
        table = out[out.index("exit codes (the lowest that applies") :]
        assert [line.split()[0] for line in table.splitlines()[1:] if line.startswith("  ") and line[2] != " "] == [
            str(code) for code in EXIT_CODES
        ]


def test_every_subcommand_describes_itself(capsys):
    for command in cli.COMMANDS:
        try:
            cli.main([command.NAME, "--help"], {})
        except SystemExit:
            pass
        out = capsys.readouterr().out
        assert out.startswith(f"usage: oracle_gate {command.NAME}") and command.DESCRIPTION.splitlines()[0] in out
