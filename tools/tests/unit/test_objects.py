"""objects.py: blobs read through one `git cat-file --batch`, hashed as a stream, and the digests a
caller vouches for; and how `check` uses them for the merge base's pins."""

from __future__ import annotations

import contextlib
import hashlib

import pytest

from tools.oracle_gate.check import run_check
from tools.oracle_gate.errors import GitError
from tools.oracle_gate.git import objects
from tools.oracle_gate.git.tree import GitTree
from tools.testing.gitrepo import IDS, junit


def _blob_oids(project) -> dict[str, str]:
    return {path: entry.ref for path, entry in GitTree(str(project.path), "HEAD").files("oracles/blobs").items()}


def test_a_blob_is_hashed_in_chunks_and_read_whole_alike(project, monkeypatch):
    data = bytes(range(256)) * 40 + b"tail"
    project.write("oracles/blobs/big.bin", data)
    project.commit("big")
    oid = _blob_oids(project)["oracles/blobs/big.bin"]
    monkeypatch.setattr(objects, "CHUNK", 1000)
    cat = objects.CatFile(str(project.path))
    try:
        pieces = list(cat.chunks(oid))
        assert max(len(p) for p in pieces) == 1000 and len(pieces) == 11
        assert b"".join(pieces) == cat.read(oid) == data
        assert objects.digest(cat, oid) == hashlib.sha256(data).hexdigest()
        # The same process answers the next object too, and a missing one is an error, not bytes.
        with pytest.raises(GitError, match="is not a readable blob"):
            cat.read("0" * 40)
        assert cat.read(oid) == data
    finally:
        cat.close()


@contextlib.contextmanager
def _unhashed_table(project):
    """(object id of table.json, a reader), with no digest known for it; cleared again afterwards."""
    oid = _blob_oids(project)["oracles/blobs/table.json"]
    cat = objects.CatFile(str(project.path))
    objects._COMPUTED.pop(oid, None)  # hashed by an earlier test of this process
    try:
        yield oid, cat
    finally:
        cat.close()


def test_a_vouched_digest_is_used_until_forgotten_and_a_computed_one_always(project):
    with _unhashed_table(project) as (oid, cat):
        trust = objects.Trust()
        trust.vouch_digest(oid, "f" * 64)
        assert objects.digest(cat, oid, trust) == "f" * 64
        trust = objects.Trust()
        actual = objects.digest(cat, oid, trust)
        assert actual == hashlib.sha256(project.read("oracles/blobs/table.json")).hexdigest()
        trust.vouch_digest(oid, "f" * 64)  # a claim never overrides what was hashed
        assert objects.digest(cat, oid, trust) == actual


def _reads(monkeypatch) -> list[str]:
    """Records the object ids `check` reads through cat-file from now on."""
    read: list[str] = []
    original = objects.CatFile.chunks

    def chunks(self, oid):
        read.append(oid)
        return original(self, oid)

    monkeypatch.setattr(objects.CatFile, "chunks", chunks)
    objects._COMPUTED.clear()
    return read


def test_blobs_the_merge_base_pinned_the_same_way_are_not_read(project, tmp_path, monkeypatch):
    project.write("shop/calc.py", project.read("shop/calc.py").decode() + "\n# reworded\n")
    project.commit("production only")
    blobs = set(_blob_oids(project).values())
    read = _reads(monkeypatch)
    report = run_check(str(project.path), "main", results=[junit(tmp_path, {i: "passed" for i in IDS})], environ={})
    assert report.exit_code == 0, [v.line() for v in report.violations]
    assert not blobs & set(read)
    read.clear()
    report = run_check(
        str(project.path), "main", results=[junit(tmp_path, {i: "passed" for i in IDS})], environ={}, verify_all=True
    )
    assert report.exit_code == 0 and blobs <= set(read)


def test_a_re_pinned_blob_is_hashed_again_whatever_the_base_said(project, tmp_path):
    # Same object, new pin: the base vouched for the old pin only, so the bytes are hashed (exit 5).
    toml = project.read("oracles/shop.toml").decode()
    project.write(
        "oracles/shop.toml",
        toml.replace(hashlib.sha256(project.read("oracles/blobs/table.json")).hexdigest(), "e" * 64),
    )
    project.write_manifest()
    project.commit("re-pin")
    report = run_check(
        str(project.path),
        "main",
        results=[junit(tmp_path, {i: "passed" for i in IDS})],
        labels={"oracle-change"},
        environ={},
    )
    assert report.exit_code == 5
    assert any("table.json does not match its pin: expected sha256 " + "e" * 64 in v.line() for v in report.violations)


def _base_with_pin(project, pin: str, manifest_too: bool) -> None:
    """Rewrites main so that add_table pins `pin` (and, with `manifest_too`, the manifest says the
    blob hashes to it), then commits a production-only change on top."""
    toml = project.read("oracles/shop.toml").decode()
    true_pin = hashlib.sha256(project.read("oracles/blobs/table.json")).hexdigest()
    project.git("checkout", "-q", "main")
    project.write("oracles/shop.toml", toml.replace(true_pin, pin))
    project.write_manifest()
    if manifest_too:
        project.write(
            "oracles/MANIFEST.sha256", project.read("oracles/MANIFEST.sha256").decode().replace(true_pin, pin)
        )
    project.commit("a base that never passed the gate")
    project.git("checkout", "-q", "-B", "production-only")
    project.write("shop/calc.py", project.read("shop/calc.py").decode() + "\n# reworded\n")
    project.commit("production only")


def test_a_base_pin_its_own_manifest_contradicts_is_caught(project, tmp_path, monkeypatch):
    # The manifest vouches for the digest; the row's pin differs, so the row fails (its bytes are
    # then read only to explain the mismatch).
    _base_with_pin(project, "d" * 64, manifest_too=False)
    _reads(monkeypatch)
    report = run_check(str(project.path), "main", results=[junit(tmp_path, {i: "passed" for i in IDS})], environ={})
    assert report.exit_code == 5
    assert any("table.json does not match its pin" in v.line() for v in report.violations)


def test_a_base_whose_manifest_agrees_with_a_wrong_pin_is_believed_unless_verify_all(project, tmp_path, monkeypatch):
    # The base is trusted to have passed the gate; --verify-all checks it anyway.
    _base_with_pin(project, "d" * 64, manifest_too=True)
    results = [junit(tmp_path, {i: "passed" for i in IDS})]
    _reads(monkeypatch)  # forget the digests hashed earlier in this process: they are true and would win
    assert run_check(str(project.path), "main", results=results, environ={}).exit_code == 0
    report = run_check(str(project.path), "main", results=results, environ={}, verify_all=True)
    assert report.exit_code == 5
    assert not hasattr(objects, "_TRUSTED") and not hasattr(objects, "_CLAIMS")  # trust lives in a run's Trust


def test_a_read_stopped_half_way_does_not_leak_into_the_next(project, monkeypatch):
    data = b"x" * 5000
    project.write("oracles/blobs/big.bin", data)
    project.commit("big")
    oids = _blob_oids(project)
    monkeypatch.setattr(objects, "CHUNK", 1000)
    cat = objects.CatFile(str(project.path))
    try:
        stream = cat.chunks(oids["oracles/blobs/big.bin"])
        assert next(stream) == b"x" * 1000
        del stream
        assert cat.read(oids["oracles/blobs/table.json"]) == project.read("oracles/blobs/table.json")
        with pytest.raises(GitError, match="is not a full object id"):
            cat.read("HEAD:oracles/shop.toml")
    finally:
        cat.close()


def test_an_object_that_is_not_a_blob_leaves_nothing_in_the_pipe(project):
    # A commit whose message looks like a cat-file header must not be read as the next blob.
    project.git("commit", "-q", "--allow-empty", "-m", "x blob 5\n\nEVIL!")
    commit = project.git("rev-parse", "HEAD").strip()
    oid = _blob_oids(project)["oracles/blobs/table.json"]
    cat = objects.CatFile(str(project.path))
    try:
        with pytest.raises(GitError, match="is not a readable blob"):
            cat.read(commit)
        assert cat.read(oid) == project.read("oracles/blobs/table.json")
        with pytest.raises(GitError, match="is not a full object id"):
            cat.read(oid[:12])
    finally:
        cat.close()


def test_conflicting_claims_for_one_object_cancel(project):
    with _unhashed_table(project) as (oid, cat):
        trust = objects.Trust()
        trust.vouch_digest(oid, "a" * 64)
        trust.vouch_digest(oid, "b" * 64)
        trust.vouch_digest(oid, "a" * 64)
        assert trust.digest(oid) is None
        assert objects.digest(cat, oid, trust) == hashlib.sha256(project.read("oracles/blobs/table.json")).hexdigest()


def test_a_manifest_line_forged_inside_a_file_name_vouches_for_nothing(project):
    # U+0085 splits a str into lines. A manifest line whose name holds it and a fake line (as a gate
    # without this rule would have written it) must not vouch for table.json's object, and such a
    # name can no longer be listed.
    from tools.oracle_gate.errors import OracleError
    from tools.oracle_gate.git.tree import WorkTree
    from tools.oracle_gate.suite.loader import load_oracles
    from tools.oracle_gate.suite.manifest import render, vouch_for_base

    table = hashlib.sha256(project.read("oracles/blobs/table.json")).hexdigest()
    name = "oracles/blobs/a\x85" + "c" * 64 + "  oracles/blobs/table.json"
    manifest = project.read("oracles/MANIFEST.sha256").decode() + f"{hashlib.sha256(b'[]').hexdigest()}  {name}\n"
    project.write(name, b"[]")
    with pytest.raises(OracleError, match="line break of any kind"):
        render(WorkTree(str(project.path)))
    project.write("oracles/MANIFEST.sha256", manifest)
    project.commit("a forged manifest line")
    tree = GitTree(str(project.path), "HEAD")
    trust = objects.Trust()
    vouch_for_base(tree, load_oracles(tree, verify_blobs=False), trust)
    assert trust.digest(_blob_oids(project)["oracles/blobs/table.json"]) == table


def test_a_merge_base_inside_a_merged_branch_vouches_for_nothing(project, tmp_path, monkeypatch):
    project.git("checkout", "-q", "-B", "feature", "main")
    project.write("shop/extra.py", "X = 1\n")
    inside = project.commit("inside a pull request")
    project.git("checkout", "-q", "main")
    project.git("merge", "-q", "--no-ff", "-m", "merge the pull request", "feature")
    project.git("checkout", "-q", "-B", "forked", inside)
    project.write("shop/calc.py", project.read("shop/calc.py").decode() + "\n# reworded\n")
    project.commit("forked from the pull request, not from main")
    blobs = set(_blob_oids(project).values())
    read = _reads(monkeypatch)
    # --head-only: the tip is not merged, so only the merge base could vouch (the tip always does).
    report = run_check(
        str(project.path), "main", results=[junit(tmp_path, {i: "passed" for i in IDS})], environ={}, head_only=True
    )
    assert report.exit_code == 0, [v.line() for v in report.violations]
    assert blobs <= set(read)
