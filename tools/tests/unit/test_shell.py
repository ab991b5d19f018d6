"""guard/shell.py: the words a shell command writes, passes to a program, or names."""

from __future__ import annotations

import pytest

from tools.oracle_gate.guard.shell import command_words


def written(command: str, cwd: str = "/r") -> list[str]:
    return [f"{c}/{w}" if not w.startswith("/") else w for w, c in command_words(command, cwd).written]


def given(command: str, cwd: str = "/r") -> list[str]:
    return [w for w, _ in command_words(command, cwd).given]


def test_redirections_tee_sed_in_place_and_dd_are_writes():
    assert written("echo x > a") == ["/r/a"]
    assert written("echo x >> a 2> b &> c") == ["/r/a", "/r/b", "/r/c"]
    assert written("cat x | tee -a a b") == ["/r/a", "/r/b"]
    assert written("sed -i 's/x/y/' a b") == ["/r/a", "/r/b"]
    assert written("sed -i.bak -e s/x/y/ a") == ["/r/a"]
    assert written("sed --in-place=.orig s/x/y/ a") == ["/r/a"]
    assert written("dd if=/dev/zero of=a") == ["/r/a"]
    assert written("sed -n 1p a") == [] and given("sed -n 1p a") == []


def test_cd_moves_later_relative_paths_and_an_unknown_cd_counts_as_indirect():
    assert written("cd sub && echo x > a; cd .. ; echo y > b") == ["/r/sub/a", "/r/b"]
    found = command_words('cd "$X" && rm a', "/r")
    assert found.unknown_cwd and found.indirect


def test_readers_give_nothing_and_other_programs_give_every_word():
    assert given("cat a | grep x b | wc -l") == []
    assert given("git diff main -- a && git add -A && git commit -m m") == []
    assert given("git checkout HEAD -- a") == ["checkout", "HEAD", "--", "a"]
    assert given("cp a b") == ["a", "b"]
    assert given("find . -name x") == [] and "-delete" in given("find . -name x -delete")


@pytest.mark.parametrize(
    "command",
    ["bash -c 'echo x > a'", 'sh -ec "echo x > a"', "eval 'echo x > a'", "echo $(echo x > a)", "echo `echo x > a`"],
)
def test_nested_commands_are_read_again(command):
    assert "/r/a" in written(command)


def test_wrappers_run_the_command_after_their_options():
    assert given("sudo -u u timeout 5 rm a") == ["a"]
    assert given("env A=1 nice -n 5 rm a") == ["a"]
    assert command_words("ls | xargs rm", "/r").indirect


def test_loops_and_expansions_compute_their_targets():
    loop = command_words("for f in a b; do rm $f; done", "/r")
    assert loop.computes_targets and {"a", "b"} <= {w for w, _ in loop.named}
    assert not command_words("for f in a b; do echo $f; done", "/r").computes_targets


def test_scripts_and_options_name_their_path_like_pieces():
    named = {w for w, _ in command_words("python3 -c \"open('x/y.json','w')\" --out=z/w", "/r").named}
    assert {"x/y.json", "z/w"} <= named


def test_an_unclosed_quote_is_an_error():
    with pytest.raises(ValueError):
        command_words("echo 'open", "/r")
