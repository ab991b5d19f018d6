"""The local paths a workspace names outside its tree, and how the clean run's sealed root shows them."""

from __future__ import annotations

import os

import pytest

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.runs.local_paths import local_paths, outside
from tools.oracle_gate.runs.sealed_root import local_shown

WORKSPACE = """workspace(name = "shop")
# local_repository(name = "commented", path = "/nowhere")
local_repository(
    name = "oracle_gate",
    path = "../oracle-gate",
)
local_repository(name = "rules_cc", path = "../oracle-gate/third_party/rules_cc")
new_local_repository(name = "data", build_file = "//:data.BUILD", path = '/srv/data')
local_repository(name = "inside", path = "third_party/inside")
"""
BAZELRC = """common --override_module=protobuf=%workspace%/../oracle-gate/third_party/bzlmod/protobuf
common:offline --override_repository=rules_java=/usr/share/bazel/rules/java
build --nosandbox_debug
"""


def _tree(tmp_path, files):
    tree = tmp_path / "clean" / "tree"
    for rel, text in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    return str(tree)


def test_every_rule_and_override_flag_is_found_with_file_and_line(tmp_path):
    tree = _tree(
        tmp_path,
        {
            "WORKSPACE": WORKSPACE,
            ".bazelrc": BAZELRC,
            "MODULE.bazel": 'local_path_override(module_name = "g", path = "vendor/g")\n',
        },
    )
    repo = str(tmp_path / "work" / "shop")
    found = local_paths(tree, repo)
    assert [(p.source, p.rule, p.written) for p in found] == [
        ("WORKSPACE:5", "local_repository", "../oracle-gate"),
        ("WORKSPACE:7", "local_repository", "../oracle-gate/third_party/rules_cc"),
        ("WORKSPACE:8", "new_local_repository", "/srv/data"),
        ("WORKSPACE:9", "local_repository", "third_party/inside"),
        ("MODULE.bazel:1", "local_path_override", "vendor/g"),
        (".bazelrc:1", "--override_module", "%workspace%/../oracle-gate/third_party/bzlmod/protobuf"),
        (".bazelrc:2", "--override_repository", "/usr/share/bazel/rules/java"),
    ]
    gate = found[0]
    assert gate.host == os.path.realpath(tmp_path / "work" / "oracle-gate")
    assert gate.seen_at == str(tmp_path / "clean" / "oracle-gate")
    far = outside(found, tree, ["offline"])
    assert [p.written for p in far] == [
        "../oracle-gate",
        "../oracle-gate/third_party/rules_cc",
        "/srv/data",
        "%workspace%/../oracle-gate/third_party/bzlmod/protobuf",
        "/usr/share/bazel/rules/java",
    ]


def test_the_root_shows_relative_paths_where_the_tree_looks_and_refuses_missing_ones(tmp_path):
    gate = tmp_path / "work" / "oracle-gate"
    gate.mkdir(parents=True)
    tree = _tree(tmp_path, {"WORKSPACE": 'local_repository(name = "g", path = "../oracle-gate")\n'})
    found = outside(local_paths(tree, str(tmp_path / "work" / "shop")), tree)
    same, moved = local_shown(found, ["/usr"])
    assert same == [] and moved == [(str(gate), str(tmp_path / "clean" / "oracle-gate"))]
    tree = _tree(tmp_path, {"WORKSPACE": 'local_repository(name = "g", path = "../missing")\n'})
    with pytest.raises(
        GateError,
        match=r"WORKSPACE:1 local_repository \.\./missing: .*missing does not exist on this "
        r"machine.*ORACLE_GATE_SEAL_READ_ONLY",
    ):
        local_shown(outside(local_paths(tree, str(tmp_path / "work" / "shop")), tree), ["/usr"])


def test_an_absolute_path_is_shown_at_its_own_place_and_system_ones_are_shown_already(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    tree = _tree(
        tmp_path,
        {
            "WORKSPACE": f'local_repository(name = "d", path = "{data}")\n'
            'local_repository(name = "j", path = "/usr/lib")\n'
        },
    )
    same, moved = local_shown(outside(local_paths(tree, "/srv/shop"), tree), ["/usr"])
    assert same == [str(data)] and moved == []


def test_a_path_inside_a_folder_shown_already_gets_no_mount_of_its_own(tmp_path):
    (tmp_path / "work" / "oracle-gate" / "third_party" / "rules_cc").mkdir(parents=True)
    tree = _tree(
        tmp_path,
        {
            "WORKSPACE": 'local_repository(name = "g", path = "../oracle-gate")\n'
            'local_repository(name = "c", path = "../oracle-gate/third_party/rules_cc")\n'
        },
    )
    _, moved = local_shown(outside(local_paths(tree, str(tmp_path / "work" / "shop")), tree), ["/usr"])
    assert moved == [(str(tmp_path / "work" / "oracle-gate"), str(tmp_path / "clean" / "oracle-gate"))]


def test_a_config_lines_path_counts_only_when_the_run_uses_that_config(tmp_path):
    tree = _tree(
        tmp_path,
        {
            ".bazelrc": "common:bazel7-workspace --override_repository=skylib=/nowhere/skylib\n"
            "build --override_module=m=/srv/m\n"
        },
    )
    found = local_paths(tree, "/srv/shop")
    assert [p.config for p in found] == ["bazel7-workspace", ""]
    assert [p.written for p in outside(found, tree)] == ["/srv/m"]
    assert [p.written for p in outside(found, tree, ["bazel7-workspace"])] == ["/nowhere/skylib", "/srv/m"]
    assert len(outside(found, tree, None)) == 2
