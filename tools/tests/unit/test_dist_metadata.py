"""authoring/dist_metadata.py: the distribution metadata init gives py_dist_info, from pyproject.toml
(PEP 621, Poetry) or the flags, and the one-line refusals."""

from __future__ import annotations

import re

import pytest

from tools.oracle_gate.authoring.dist_metadata import DYNAMIC_VERSION, dist_metadata
from tools.oracle_gate.errors import UsageError


def project(tmp_path, text):
    (tmp_path / "pyproject.toml").write_text(text)
    return str(tmp_path)


def test_pep_621_gives_name_version_and_entry_points(tmp_path):
    repo = project(
        tmp_path,
        '[project]\nname = "Inter-Valz"\nversion = "1.2.0"\n'
        '[project.scripts]\niv = "intervalz.cli:main"\n'
        '[project.entry-points."intervalz.plugins"]\nx = "intervalz.x:X"\n',
    )
    found, notes = dist_metadata(repo)
    assert (found.name, found.version, notes) == ("Inter-Valz", "1.2.0", [])
    assert found.entry_points == {
        "console_scripts": ["iv = intervalz.cli:main"],
        "intervalz.plugins": ["x = intervalz.x:X"],
    }


def test_poetry_and_a_dynamic_version(tmp_path):
    found, _ = dist_metadata(project(tmp_path, '[tool.poetry]\nname = "shop"\nversion = "0.3"\n'))
    assert (found.name, found.version) == ("shop", "0.3")
    found, notes = dist_metadata(project(tmp_path, '[project]\nname = "shop"\ndynamic = ["version"]\n'))
    assert found.version == DYNAMIC_VERSION and "--dist-version" in notes[0]
    found, notes = dist_metadata(str(tmp_path), None, "4.5")
    assert found.version == "4.5" and not notes


def test_without_pyproject_only_the_flags_name_it(tmp_path):
    assert dist_metadata(str(tmp_path)) == (None, [])
    found, _ = dist_metadata(str(tmp_path), "shop", "1.0")
    assert (found.name, found.version, found.source) == ("shop", "1.0", "init's --dist-name")


@pytest.mark.parametrize(
    "text, name, version, message",
    [
        (
            '[project]\nname = "shop"\n',
            "other",
            None,
            "--dist-name 'other' does not match pyproject.toml's name 'shop'",
        ),
        ('[project]\nname = "shop"\n', None, "1 0", "--dist-version: '1 0' is not a version"),
        (
            '[project]\nname = "sh op"\nversion = "1"\n',
            None,
            None,
            "field project.name: 'sh op' is not a distribution name",
        ),
        ("[project\n", None, None, "pyproject.toml: cannot read it"),
    ],
)
def test_bad_metadata_is_one_line(tmp_path, text, name, version, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        dist_metadata(project(tmp_path, text), name, version)


@pytest.mark.parametrize(
    "table, message",
    [
        (
            '[project.scripts]\ngo = "shop.cli:main $HOME"\n',
            "entry point 'go = shop.cli:main $HOME' of 'console_scripts'",
        ),
        ('[project.entry-points."grp]\\n[x"]\na = "shop:b"\n', "entry point group 'grp]\\n[x' is not a group name"),
    ],
)
def test_an_entry_point_that_entry_points_txt_cannot_hold_is_one_line(tmp_path, table, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        dist_metadata(project(tmp_path, '[project]\nname = "shop"\nversion = "1"\n' + table))
