"""guard/shell.py: the words a shell command writes, passes to a program, or names."""

from __future__ import annotations

import os

import pytest

from tools.oracle_gate.guard.shell import command_words


def written(command: str, cwd: str = "/r") -> list[str]:
    return [f"{c}/{w}" if not w.startswith("/") else w for w, c in command_words(command, cwd).written]


def given(command: str, cwd: str = "/r") -> list[str]:
    return [w for w, _ in command_words(command, cwd).given]


def deep(command: str, cwd: str = "/r") -> list[str]:
    return [w for w, _ in command_words(command, cwd).deep]


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
    assert deep("git checkout HEAD -- a") == ["checkout", "HEAD", "a"]
    assert [w for w, _ in command_words("git checkout HEAD -- a", "/r").revisions] == ["HEAD"]
    assert deep("cp a b") == ["b"] and deep("cp -t d a b") == ["d"] and deep("mv a b") == ["a", "b", "b"]
    assert given("ruff check billing") == ["check", "billing"] and deep("ruff check billing") == []
    assert given("find . -name x") == [] and "-delete" in deep("find . -name x -delete")
    assert given("find . -exec grep -n x {} +") == [] and "rm" in deep("find . -exec rm {} +")
    assert command_words("git config core.hooksPath /dev/null", "/r").git_config
    assert not command_words("git config --get user.name", "/r").git_config


@pytest.mark.parametrize(
    "command",
    ["bash -c 'echo x > a'", 'sh -ec "echo x > a"', "eval 'echo x > a'", "echo $(echo x > a)", "echo `echo x > a`"],
)
def test_nested_commands_are_read_again(command):
    assert "/r/a" in written(command)


def test_wrappers_run_the_command_after_their_options():
    assert deep("sudo -u u timeout 5 rm a") == ["a"]
    assert deep("env A=1 nice -n 5 rm a") == ["a"]
    assert command_words("ls | xargs rm", "/r").indirect
    assert not command_words("find . -name '*.py' | xargs grep -n foo", "/r").indirect


def test_loops_and_expansions_compute_their_targets():
    loop = command_words("for f in a b; do rm $f; done", "/r")
    assert loop.computes_targets and {"a", "b"} <= {w for w, _ in loop.named}
    assert not command_words("for f in a b; do echo $f; done", "/r").computes_targets


def test_expansions_the_words_show_are_made():
    home = os.path.expanduser("~")
    assert "/r/.bazelrc" in written("echo x > $PWD/.bazelrc") and "/r/.bazelrc" in written("echo x > ~+/.bazelrc")
    assert f"{home}/x" in written("echo x > ~/x")
    assert ".bazelrc" in deep("cp /tmp/x $'.bazelrc'")
    assert {"/r/oracles/b.toml", "/r/x/b.toml"} <= set(written("tee {oracles,x}/b.toml"))
    assert command_words('echo x > "$(echo y)"', "/r").indirect
    found = command_words("cd && cp /tmp/x a", "/r")
    assert (("a", home) in found.deep) and not found.unknown_cwd
    assert command_words("cd - && cp /tmp/x a", "/r").unknown_cwd


def test_interpreters_and_sed_write_commands_name_their_pieces():
    found = command_words("python3 -c \"open('oracles/b.toml','w')\"", "/r")
    assert found.scripted and "oracles/b.toml" in {w for w, _ in found.named}
    assert "oracles/b.toml" in given("sed 's/a/b/w oracles/b.toml' f")
    heredoc = command_words("python3 - <<'EOF'\nopen('oracles/b.toml', 'w')\nEOF", "/r")
    assert heredoc.scripted and "oracles/b.toml" in {w for w, _ in heredoc.named}


def test_patches_and_archives():
    assert [w for w, _ in command_words("git apply p.diff", "/r").patches] == ["p.diff"]
    assert [w for w, _ in command_words("patch -p1 < p.diff", "/r").patches] == ["p.diff"]
    assert written("tar -xf a.tar -C sub") == ["/r/sub"] and written("unzip a.zip") == ["/r/."]
    assert written("tar -tf a.tar") == []


def test_scripts_and_options_name_their_path_like_pieces():
    named = {w for w, _ in command_words("python3 -c \"open('x/y.json','w')\" --out=z/w", "/r").named}
    assert {"x/y.json", "z/w"} <= named


def test_an_unclosed_quote_is_an_error():
    with pytest.raises(ValueError):
        command_words("echo 'open", "/r")
