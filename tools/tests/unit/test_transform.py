"""Checkout-time byte transformations never break or re-pin pinned bytes, and are named when forced."""

from __future__ import annotations

import codecs
import hashlib
import subprocess

import pytest

from tools.oracle_gate.git.transform import explain, restore_command
from tools.oracle_gate.git.tree import GitTree, WorkTree
from tools.oracle_gate.git.worktree import differences
from tools.oracle_gate.suite.loader import load_oracles
from tools.oracle_gate.suite.manifest import manifest_problems
from tools.testing.gitrepo import GIT_ENV, IDS, GitRepo, junit

ATTRIBUTES = "/oracles/** -text -eol -ident -filter -working-tree-encoding\n"
COMMITTED = b'[\n {"a": 1},\n {"$Id$": 2}\n]\n'


def pinned(original: bytes):
    return lambda data: hashlib.sha256(data).hexdigest() == hashlib.sha256(original).hexdigest()


@pytest.mark.parametrize(
    ("on_disk", "words"),
    [
        (COMMITTED.replace(b"\n", b"\r\n"), "line endings converted from LF to CRLF"),
        (COMMITTED.replace(b"$Id$", b"$Id: " + b"ab" * 20 + b" $"), "`$Id$` expanded"),
        (codecs.BOM_UTF16_LE + COMMITTED.decode().encode("utf-16-le"), "re-encoded (a `working-tree-encoding`"),
        (
            codecs.BOM_UTF16_BE + COMMITTED.decode().replace("\n", "\r\n").encode("utf-16-be"),
            "re-encoded and given CRLF",
        ),
    ],
)
def test_each_transformation_is_named(on_disk, words):
    what = explain(on_disk, pinned(COMMITTED))
    assert what is not None and words in what


def test_lf_conversion_of_committed_crlf_bytes_is_named():
    committed = COMMITTED.replace(b"\n", b"\r\n")
    assert "from CRLF to LF" in explain(COMMITTED, pinned(committed))


@pytest.mark.parametrize(
    "on_disk", [COMMITTED + b" ", COMMITTED, b"", COMMITTED.replace(b"1", b"2").replace(b"\n", b"\r\n")]
)
def test_an_edit_or_no_change_is_not_taken_for_a_transformation(on_disk):
    assert explain(on_disk, pinned(COMMITTED)) is None


@pytest.fixture
def origin(project):
    """The project with the repository's attributes committed on main, as this repository ships them."""
    project.git("checkout", "-q", "main")
    project.write(".gitattributes", ATTRIBUTES)
    project.commit("attributes")
    return project


def clone(origin: GitRepo, dest, *config: str, options: tuple[str, ...] = ()) -> GitRepo:
    subprocess.run(
        ["git", *config, "clone", "-q", *options, str(origin.path), str(dest)],
        check=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(dest.parent), **GIT_ENV},
    )
    return GitRepo(dest)


@pytest.mark.parametrize(
    "config",
    [
        ("-c", "core.autocrlf=true"),
        ("-c", "core.eol=crlf"),
        ("-c", "core.autocrlf=true", "-c", "core.eol=crlf"),
    ],
)
def test_a_converting_clone_keeps_oracles_byte_exact(origin, tmp_path, config):
    copy = clone(origin, tmp_path / "copy", *config)
    for path in ("oracles/shop.toml", "oracles/blobs/bound.json", "oracles/MANIFEST.sha256"):
        assert copy.read(path) == origin.read(path)
    check = subprocess.run(
        ["sha256sum", "--check", "--quiet", "oracles/MANIFEST.sha256"],
        cwd=copy.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert manifest_problems(WorkTree(str(copy.path))) == []
    assert not load_oracles(WorkTree(str(copy.path))).problems


def forced_crlf_clone(origin: GitRepo, tmp_path) -> GitRepo:
    """A clone whose .git/info/attributes (which outranks .gitattributes) forces CRLF under oracles/."""
    copy = clone(origin, tmp_path / "forced", "-c", "core.autocrlf=true", options=("--no-checkout",))
    (copy.path / ".git/info").mkdir(exist_ok=True)
    (copy.path / ".git/info/attributes").write_text("oracles/** text eol=crlf\n")
    copy.git("checkout", "-q", "main")
    assert b"\r\n" in copy.read("oracles/blobs/bound.json")
    return copy


def test_forced_conversion_is_named_with_how_to_restore_never_a_re_pin(origin, tmp_path):
    copy = forced_crlf_clone(origin, tmp_path)
    problems = [str(p) for p in load_oracles(WorkTree(str(copy.path))).problems]
    bound = next(p for p in problems if "oracles/blobs/bound.json does not match its pin" in p)
    assert "they are the pinned bytes, rewritten at checkout: line endings converted from LF to CRLF" in bound
    assert (
        "do not re-pin: restore the committed bytes with `git cat-file blob HEAD:oracles/blobs/bound.json > "
        "oracles/blobs/bound.json`" in bound
    )
    assert "update blob_sha256" not in bound
    # The committed bytes are what git holds: the gate's own reading of HEAD is unaffected.
    assert not load_oracles(GitTree(str(copy.path), "HEAD")).problems

    (manifest,) = manifest_problems(WorkTree(str(copy.path)))
    assert "git rewrote" in str(manifest) and "oracles/blobs/bound.json (line endings converted" in str(manifest)
    assert "do not regenerate the manifest or re-pin" in str(manifest)

    dirty = differences(str(copy.path), GitTree(str(copy.path), "HEAD"))
    assert (
        "oracles/blobs/bound.json (bytes differ from the commit, rewritten at checkout: line endings converted "
        "from LF to CRLF (core.autocrlf=true, core.eol=crlf, or a `text`/`eol=crlf` attribute); restore with "
        "`git cat-file blob HEAD:oracles/blobs/bound.json > oracles/blobs/bound.json`)" in dirty
    )

    # The advised command restores the pinned bytes.
    restored = subprocess.run(
        ["git", "cat-file", "blob", "HEAD:oracles/blobs/bound.json"], cwd=copy.path, capture_output=True, check=True
    ).stdout
    assert restored == origin.read("oracles/blobs/bound.json")


def test_the_manifest_command_names_the_rewrite(gate, origin, tmp_path):
    copy = forced_crlf_clone(origin, tmp_path)
    code, out, err = gate("--repo", str(copy.path), "manifest", "--check")
    assert code == 5, out + err
    assert err.count("\n") == 1 and "git rewrote" in err and "do not regenerate the manifest" in err


def test_an_unexplained_mismatch_still_says_how_to_check_before_re_pinning(origin, tmp_path):
    origin.write("oracles/blobs/bound.json", origin.read("oracles/blobs/bound.json") + b" ")
    problems = [str(p) for p in load_oracles(WorkTree(str(origin.path))).problems]
    bound = next(p for p in problems if "bound.json does not match its pin" in p)
    assert bound.endswith(
        "if you changed the blob on purpose, update blob_sha256 (`pin --write`) in a change labelled oracle-change; "
        "if you did not and HEAD has the file, `git cat-file blob HEAD:oracles/blobs/bound.json > "
        "oracles/blobs/bound.json` restores the committed bytes"
    )


def test_bytes_committed_converted_are_named_as_such_not_as_a_checkout(gate, origin, tmp_path):
    # The pin is over LF bytes; the commit holds the CRLF copy. Restoring from HEAD would loop.
    origin.git("checkout", "-q", "change")
    origin.git("merge", "-q", "main")
    data = origin.read("oracles/blobs/bound.json")
    origin.write("oracles/blobs/bound.json", data.replace(b"\n", b"\r\n"))
    origin.write_manifest()
    origin.commit("commit converted bytes")
    code, out, _ = gate(
        "--repo",
        str(origin.path),
        "check",
        "--base",
        "main",
        "--label",
        "oracle-change",
        "--results",
        junit(tmp_path, {i: "passed" for i in IDS}),
    )
    assert code == 5, out
    [line] = [line for line in out.splitlines() if "bound.json does not match its pin" in line]
    assert "they are the pinned bytes as committed after a rewrite: line endings converted from LF to CRLF" in line
    assert "commit the pinned bytes instead of this converted copy" in line
    assert "rewritten at checkout" not in line and "HEAD:" not in line


def test_restore_commands_quote_the_path(project):
    name = "oracles/blobs/x$(touch${IFS}INJ).json"
    project.write(name, b"[]\n")
    rows = project.read("oracles/shop.toml").decode().replace("oracles/blobs/bound.json", name)
    project.write("oracles/shop.toml", rows)
    problems = [str(p) for p in load_oracles(WorkTree(str(project.path))).problems]
    [line] = [p for p in problems if "does not match its pin" in p]
    assert (
        "`git cat-file blob 'HEAD:oracles/blobs/x$(touch${IFS}INJ).json' > 'oracles/blobs/x$(touch${IFS}INJ).json'`"
        in line
    )
    assert (
        restore_command("oracles/blobs/a'b.json")
        == "git cat-file blob 'HEAD:oracles/blobs/a'\"'\"'b.json' > 'oracles/blobs/a'\"'\"'b.json'"
    )
