"""docs/design.md section 11: a change is judged on the merge result of HEAD into the base tip, with the
tip's claims, on a real git repository; each run really calls the rows of the tree it is given (the
row runner's caller and judge, no Bazel).

Every change below branches from an older main and breaks `shop.calc:add` in a way that the rows of
its merge base cannot see; main then gains a row, tightens one, or re-pins a blob that does see it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from tools.oracle_gate.check import run_check
from tools.oracle_gate.git.pristine import pristine_tree
from tools.oracle_gate.runs.bazel_run import BazelRun
from tools.oracle_gate.runs.results import Observed
from tools.testing.gitrepo import BOUND_SAMPLES, GitRepo, blob_bytes, default_rows, oracle_toml, sha256
from tools.testing.rowrun import run_tree


class Runs:
    """A workspace runner and a clean runner that run the rows of the tree they are given, and
    record which trees and oracles they saw."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.workspace_trees: list[Path] = []
        self.clean_commits: list[tuple[str, str]] = []

    def outcomes(self, tree: Path, name: str) -> BazelRun:
        scratch = self.tmp / name
        scratch.mkdir(exist_ok=True)
        judged = run_tree(tree, scratch, "shop")
        return BazelRun(
            observed={i: Observed("passed" if j.ok else "failed") for i, j in judged.items()},
            targets={"//oracles:oracle_test": "PASSED"},
        )

    def workspace(self, tree: str, _environ: Mapping[str, str]) -> BazelRun:
        self.workspace_trees.append(Path(tree))
        return self.outcomes(Path(tree), "workspace")

    def clean(
        self,
        repo: str,
        head: str,
        oracles_commit: str,
        _environ: Mapping[str, str],
        _remote: bool,
        _block: Sequence[str],
    ) -> BazelRun:
        self.clean_commits.append((head, oracles_commit))
        dest = self.tmp / f"clean-{len(self.clean_commits)}"
        dest.mkdir()
        pristine_tree(repo, head, oracles_commit, str(dest))
        return self.outcomes(dest, "clean")


@pytest.fixture
def runs(tmp_path: Path) -> Runs:
    return Runs(tmp_path / "runs")


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The gate's checkout of a merge result lives in its run folder: one per test. No sandboxed
    # action runs here, so the folder may lie under /tmp.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr("tools.oracle_gate.runs.blocks.SANDBOX_WRITABLE", ())
    (tmp_path / "runs").mkdir()


def check(project: GitRepo, runs: Runs, *, clean: bool = True, head_only: bool = False, labels: Sequence[str] = ()):
    return run_check(
        str(project.path),
        "main",
        labels=set(labels),
        environ=dict(os.environ),
        clean=clean,
        workspace_runner=runs.workspace,
        clean_runner=runs.clean,
        head_only=head_only,
    )


def violations(report) -> list[str]:
    return [v.line() for v in report.violations]


def on_main(project: GitRepo, message: str, files: Mapping[str, str | bytes]) -> str:
    """Commits `files` (and a fresh manifest) on main, as a labelled change merged there would."""
    project.git("checkout", "-q", "main")
    for rel, data in files.items():
        project.write(rel, data)
    project.write_manifest()
    tip = project.commit(message)
    project.git("checkout", "-q", "change")
    return tip


def break_add(project: GitRepo, body: str) -> str:
    """Commits a broken `shop.calc:add` on the change branch."""
    project.write("shop/calc.py", f"def add(a, b):\n{body}\n\n\ndef norm(state, k):\n    return state\n")
    return project.commit("break add")


TWOS_BLOB = blob_bytes([{"args": [2, 2], "expected": 4}])
TWOS_ROW = {
    "id": "add_twos",
    "entry": "shop.calc:add",
    "kind": "exact_table",
    "blob": "oracles/blobs/twos.json",
    "blob_sha256": sha256(TWOS_BLOB),
}


def test_a_row_the_tip_added_judges_the_change(project, runs):
    head = break_add(project, "    return 0 if a == 2 else a + b")
    tip = on_main(
        project,
        "add a row",
        {"oracles/shop.toml": oracle_toml(default_rows() + [TWOS_ROW]), "oracles/blobs/twos.json": TWOS_BLOB},
    )
    report = check(project, runs)
    assert report.exit_code == 4, violations(report)
    assert "[4] oracles/shop.toml add_twos: failed: the invariant does not hold" in "\n".join(violations(report))
    assert report.tip == tip and report.head == head and report.merged not in (head, tip)
    assert project.git("rev-parse", f"{report.merged}^1", f"{report.merged}^2").split() == [tip, head]
    # Both runs judged the merge result with the tip's rows: the workspace run in the gate's own
    # checkout (never the work tree), the clean run from the merge commit with the tip's oracles.
    assert runs.workspace_trees and runs.workspace_trees[0] != project.path
    assert (runs.workspace_trees[0] / "oracles" / "blobs" / "twos.json").read_bytes() == TWOS_BLOB
    assert runs.clean_commits == [(report.merged, tip)]
    assert report.clean_outcomes is not None and report.clean_outcomes["add_twos"] == "failed"
    assert any(
        n.startswith(f"judged: the merge result {report.merged[:12]} of HEAD {head[:12]} into the base tip {tip[:12]}")
        for n in report.notes
    ), report.notes
    # Before: the claims of the merge base, which has no such row, passed the same change.
    before = check(project, runs, head_only=True)
    assert before.exit_code == 0, violations(before)
    assert any("(--head-only)" in n for n in before.notes)


REPINNED = BOUND_SAMPLES + [{"a": 5, "b": 5}]
# (how the change breaks add, what main commits after the change branched)
TIGHTENED_OR_REPINNED = {
    "tightened": (
        "    return 50 if (a, b) == (0, 0) else a + b",
        {"oracles/shop.toml": oracle_toml(default_rows(min_=0, max_=3))},
    ),
    "re-pinned": (
        "    return 1000 if a == 5 else a + b",
        {
            "oracles/blobs/bound.json": blob_bytes(REPINNED),
            "oracles/shop.toml": oracle_toml(
                [dict(default_rows()[0], blob_sha256=sha256(blob_bytes(REPINNED))), *default_rows()[1:]]
            ),
        },
    ),
}


@pytest.mark.parametrize("case", sorted(TIGHTENED_OR_REPINNED))
def test_a_row_the_tip_tightened_or_whose_blob_it_re_pinned_judges_the_change(project, runs, case):
    body, files = TIGHTENED_OR_REPINNED[case]
    break_add(project, body)
    on_main(project, case, files)
    report = check(project, runs)
    assert report.exit_code == 4, violations(report)
    assert "[4] oracles/shop.toml sum_in_range: failed" in "\n".join(violations(report))
    assert check(project, runs, head_only=True).exit_code == 0


def test_a_change_that_conflicts_with_the_tip_is_exit_1_naming_the_path(gate, project):
    break_add(project, "    return a - b")
    project.git("checkout", "-q", "main")
    project.write("shop/calc.py", "def add(a, b):\n    return b + a\n\n\ndef norm(state, k):\n    return state\n")
    project.commit("main rewrites add")
    project.git("checkout", "-q", "change")
    status = project.git("status", "--porcelain")
    code, out, err = gate("--repo", str(project.path), "check", "--base", "main")
    assert code == 1, out + err
    assert "HEAD does not merge cleanly into the base tip" in err and "conflict in shop/calc.py" in err, err
    assert "update the branch" in err and "Traceback" not in err
    assert project.git("status", "--porcelain") == status
    assert project.git("rev-parse", "--abbrev-ref", "HEAD").strip() == "change"


def test_the_work_tree_index_and_refs_are_untouched(project, runs):
    break_add(project, "    return 0 if a == 2 else a + b")
    on_main(
        project,
        "add a row",
        {"oracles/shop.toml": oracle_toml(default_rows() + [TWOS_ROW]), "oracles/blobs/twos.json": TWOS_BLOB},
    )
    project.write("harness/untracked.txt", "mine\n")

    def state() -> list[str]:
        return [
            project.git(*cmd)
            for cmd in (
                ("status", "--porcelain", "--untracked-files=all"),
                ("for-each-ref",),
                ("rev-parse", "HEAD"),
                ("stash", "list"),
            )
        ]

    before = state()
    report = check(project, runs)
    assert report.exit_code == 4
    assert state() == before
    assert (project.path / "shop" / "calc.py").read_text().startswith("def add(a, b):\n    return 0 if a == 2")
    # The same tip and HEAD give the same merge commit (a warm Bazel sees the same tree).
    assert check(project, runs).merged == report.merged


def test_a_branch_that_contains_the_tip_is_judged_as_it_is(project, runs):
    on_main(
        project,
        "add a row",
        {"oracles/shop.toml": oracle_toml(default_rows() + [TWOS_ROW]), "oracles/blobs/twos.json": TWOS_BLOB},
    )
    project.git("merge", "-q", "--no-edit", "main")
    break_add(project, "    return 0 if a == 2 else a + b")
    report = check(project, runs)
    assert report.exit_code == 4 and report.merged == report.head, violations(report)
    assert runs.workspace_trees == [project.path]
    assert any(n.startswith("judged: HEAD ") and "which contains the base tip" in n for n in report.notes)


def test_results_of_a_head_behind_the_tip_are_refused(gate, project, tmp_path):
    from tools.testing.gitrepo import IDS, junit

    break_add(project, "    return 0 if a == 2 else a + b")
    on_main(
        project,
        "add a row",
        {"oracles/shop.toml": oracle_toml(default_rows() + [TWOS_ROW]), "oracles/blobs/twos.json": TWOS_BLOB},
    )
    results = junit(tmp_path, {i: "passed" for i in IDS})
    code, out, err = gate("--repo", str(project.path), "check", "--base", "main", "--results", results)
    assert code == 1 and "does not contain the base tip" in err and "--head-only" in err, out + err
    code, out, _ = gate("--repo", str(project.path), "check", "--base", "main", "--results", results, "--head-only")
    assert code == 0, out
    assert "(--head-only)" in out.splitlines()[0]


def test_the_report_names_the_tip_the_merge_base_head_and_the_merge_result(gate, project, monkeypatch, tmp_path):
    import tools.oracle_gate.check as check_module

    runs = Runs(tmp_path / "runs")
    monkeypatch.setattr(check_module, "default_workspace_runner", lambda _salt, _repo, *_: runs.workspace)
    head = break_add(project, "    return 0 if a == 2 else a + b")
    mb = project.git("merge-base", "main", "change").strip()
    tip = on_main(
        project,
        "add a row",
        {"oracles/shop.toml": oracle_toml(default_rows() + [TWOS_ROW]), "oracles/blobs/twos.json": TWOS_BLOB},
    )
    cache = {"XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"]}
    code, out, _ = gate("--repo", str(project.path), "check", "--base", "main", "--format", "json", environ=cache)
    doc = json.loads(out)
    assert code == 4 and doc["base_commit"] == tip and doc["merge_base"] == mb and doc["head"] == head
    assert doc["merge_result"] == doc["judged"] and doc["judged"] not in (tip, head) and doc["claims"] == tip
    code, out, _ = gate("--repo", str(project.path), "check", "--base", "main", environ=cache)
    assert out.splitlines()[0].startswith(
        f"oracle-gate check: base main (tip {tip[:12]}), merge base {mb[:12]}, "
        f"HEAD {head[:12]}, merge result {doc['judged'][:12]}; "
    ), out
    code, out, _ = gate("--repo", str(project.path), "check", "--base", "main", "--format", "markdown", environ=cache)
    assert f"merge result {doc['judged'][:12]}" in out


def test_a_tip_rename_into_a_protected_folder_is_judged_in_the_merge_result(project, runs):
    # The tip (a labelled change on main) moved notes.txt into oracles/; the change, branched
    # before, edits notes.txt. Git's rename detection carries the edit into oracles/notes.txt.
    project.git("checkout", "-q", "main")
    project.write("notes.txt", "".join(f"line {i}\n" for i in range(40)))
    project.commit("notes")
    project.git("checkout", "-q", "-B", "change", "main")
    project.write("notes.txt", "".join(f"line {i}\n" for i in range(39)) + "line 39, edited\n")
    project.commit("edit notes")
    project.git("checkout", "-q", "main")
    project.git("mv", "notes.txt", "oracles/notes.txt")
    project.write_manifest()
    project.commit("move notes into oracles")
    project.git("checkout", "-q", "change")
    report = check(project, runs)
    assert report.exit_code == 2, violations(report)
    assert (
        "[2] oracles/notes.txt: protected by 'oracles/**' and changed (M) in the merge result against the base "
        "tip without the 'oracle-change' label"
    ) in violations(report)


def test_a_labelled_change_and_a_tip_that_both_changed_the_oracles_must_update_the_branch(gate, project, runs):
    # Both sides rewrote the manifest: git cannot merge it, so the change's author must merge the
    # tip in and resolve (after which HEAD contains the tip, and its diff shows what it did to
    # the tip's rows, under the changelog rule).
    rows = default_rows()
    rows[1]["repeat"] = 3
    project.write("oracles/shop.toml", oracle_toml(rows))
    project.write_manifest()
    project.commit("labelled: more repeats")
    on_main(
        project,
        "tighten and add",
        {"oracles/shop.toml": oracle_toml(default_rows(max_=3) + [TWOS_ROW]), "oracles/blobs/twos.json": TWOS_BLOB},
    )
    code, out, err = gate("--repo", str(project.path), "check", "--base", "main", "--label", "oracle-change")
    assert code == 1 and "conflict in oracles/MANIFEST.sha256" in err, out + err


def test_a_labelled_change_behind_the_tip_is_judged_with_its_own_oracles_merged_with_the_tips(project, runs):
    rows = default_rows()
    rows[1]["repeat"] = 3
    project.write("oracles/shop.toml", oracle_toml(rows))
    project.write_manifest()
    project.commit("labelled: more repeats")
    on_main(project, "main moves on", {"harness/more.py": "# more\n"})
    report = check(project, runs, labels=["oracle-change"])
    assert report.exit_code == 0, violations(report)
    assert runs.clean_commits == [(report.merged, report.merged)]
    assert any(
        n.startswith("judged: the merge result ")
        and "with the oracles of the change (labelled), merged with the base tip's" in n
        for n in report.notes
    ), report.notes


def test_clean_run_tests_the_merge_result_with_the_tips_oracles(gate, project, monkeypatch, tmp_path):
    from tools.oracle_gate.commands import clean_run_cmd
    from tools.testing.gitrepo import IDS

    used: list[tuple[str, str]] = []

    def fake_clean_run(repo, head, oracles_commit, environ, remote=False, salt="", block=()):
        used.append((head, oracles_commit))
        return BazelRun(observed={i: Observed("passed") for i in IDS})

    monkeypatch.setattr(clean_run_cmd, "clean_run", fake_clean_run)
    head = break_add(project, "    return 0 if a == 2 else a + b")
    mb = project.git("merge-base", "main", "change").strip()
    tip = on_main(
        project,
        "add a row",
        {"oracles/shop.toml": oracle_toml(default_rows() + [TWOS_ROW]), "oracles/blobs/twos.json": TWOS_BLOB},
    )
    out = str(tmp_path / "clean.xml")
    code, text, _ = gate("--repo", str(project.path), "clean-run", "--base", "main", "--out", out)
    assert code == 0, text
    merged = used[0][0]
    assert used == [(merged, tip)] and merged not in (head, tip)
    assert f"judged: the merge result {merged[:12]} of HEAD {head[:12]} into the base tip {tip[:12]}" in text
    code, text, _ = gate("--repo", str(project.path), "clean-run", "--base", "main", "--out", out, "--head-only")
    assert code == 0 and used[1] == (head, mb), text


def test_a_committed_dotenv_file_reaches_the_workspace_runs_checkout_of_the_merge_result(project, runs):
    # Production code that is wrong only beside a committed `.env`: a checkout of the landed merge
    # holds it, so the workspace run's checkout must too (the clean run leaves it out).
    project.write("shop/.env", "MODE=fast\n")
    break_add(
        project,
        "    import os\n    here = os.path.dirname(__file__)\n"
        "    return 0 if os.path.exists(os.path.join(here, '.env')) else a + b",
    )
    on_main(project, "main moves on", {"harness/more.py": "# more\n"})
    report = check(project, runs)
    assert (runs.workspace_trees[0] / "shop" / ".env").is_file()
    assert report.exit_code == 4, violations(report)
    assert report.outcomes["add_table"] == "failed" and report.clean_outcomes["add_table"] == "passed"


def test_the_changes_own_gitattributes_choose_no_merge_driver(gate, project):
    # A nested .gitattributes of HEAD's checkout would make git's merge take both sides of a
    # conflicting line (`merge=union`); the merge of the change must conflict as on a server.
    project.write("shop/.gitattributes", "calc.py merge=union\n")
    break_add(project, "    return a + b  # change")
    project.git("checkout", "-q", "main")
    project.write(
        "shop/calc.py", "def add(a, b):\n    return a + b  # main\n\n\ndef norm(state, k):\n    return state\n"
    )
    project.commit("main edits the same line")
    project.git("checkout", "-q", "change")
    assert (project.path / "shop" / ".gitattributes").is_file()
    code, out, err = gate("--repo", str(project.path), "check", "--base", "main")
    assert code == 1 and "conflict in shop/calc.py" in err, out + err
