"""Unit tests of paths.py: spelling folds, protection globs, symlink resolution and special entries."""

from __future__ import annotations

import pytest

from tools.oracle_gate.approval.paths import (
    MAX_SYMLINK_HOPS,
    fold,
    protected_by,
    reaches_protected,
    resolve,
    special_entry_problem,
    symlink_problem,
)
from tools.oracle_gate.approval.policy import ALWAYS_PROTECTED
from tools.oracle_gate.git.tree import EXECUTABLE, GITLINK, REGULAR, SYMLINK, Entry

GLOBS = ("oracles/**", ".gitattributes", ".gitmodules", "tools/**", "WORKSPACE", "third_party/x.py")


@pytest.mark.parametrize(
    ("path", "folded"),
    [
        ("Oracles/Policy.TOML", "oracles/policy.toml"),
        ("cafe\u0301/x", "caf\u00e9/x"),  # NFD -> NFC
        ("ora\u200bcles/\u00adx\ufeff", "oracles/x"),  # default-ignorables dropped
        ("oracles\\shop.toml", "oracles/shop.toml"),  # backslash separator
        ("oracles. /x.toml.. ", "oracles/x.toml"),  # trailing dots and spaces dropped
        ("../a/.", "../a/."),  # a component of only dots is kept
        ("Stra\u00dfe", "strasse"),  # full case folding
    ],
)
def test_fold(path, folded):
    assert fold(path) == folded


@pytest.mark.parametrize(
    ("path", "glob"),
    [
        ("oracles/shop.toml", "oracles/**"),
        ("tools/oracle_gate/check.py", "tools/**"),
        ("WORKSPACE", "WORKSPACE"),
        ("ORACLES/shop.toml", "oracles/**"),  # case
        ("workspace", "WORKSPACE"),
        ("o\u200bracles/shop.toml", "oracles/**"),  # zero-width space (HFS+)
        ("Oracles./shop.toml", "oracles/**"),  # trailing dot (Windows)
        ("WORKSPACE ", "WORKSPACE"),  # trailing space (Windows)
        ("tools\\x.py", "tools/**"),  # backslash
        ("ORACLE~1/shop.toml", "oracles/**"),  # 8.3 short names
        ("TOOLS~2/x", "tools/**"),
        ("WORKSP~1", "WORKSPACE"),
        ("THIRD_~1/x.py", "third_party/x.py"),
        (".GITATTRIBUTES", ".gitattributes"),
    ],
)
def test_protected_by_every_spelling(path, glob):
    assert protected_by(path, GLOBS) == glob


@pytest.mark.parametrize(
    "path",
    [
        "shop/calc.py",
        "oracles",
        "tools",
        "oracle/x",
        "abc~1/x",
        "harness/oracles/x",
        "WORKSPACE.bak",
        "third_party/y.py",
    ],
)
def test_protected_by_none(path):
    assert protected_by(path, GLOBS) is None


def test_protected_by_normalizes_the_glob_too():
    assert protected_by("caf\u00e9/x", ["cafe\u0301/**"]) == "cafe\u0301/**"
    assert protected_by("cafe\u0301/x", ["caf\u00e9/**"]) == "caf\u00e9/**"


def test_protected_by_returns_the_first_matching_glob():
    assert protected_by("tools/BUILD.bazel", ["**/BUILD.bazel", "tools/**"]) == "**/BUILD.bazel"
    assert protected_by("a/b/c", ["a/*"]) is None and protected_by("a/b", ["a/?"]) == "a/?"


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("", "oracles/**"),  # the root reaches everything: the first glob
        ("oracles", "oracles/**"),
        ("ORACLES", "oracles/**"),
        ("oracles/sub", "oracles/**"),
        ("tools", "tools/**"),
        ("third_party", "third_party/x.py"),  # the glob lies under the directory
        ("WORKSPACE", "WORKSPACE"),
        ("third", None),
        ("shop", None),
        ("tool", None),
    ],
)
def test_reaches_protected(target, expected):
    assert reaches_protected(target, GLOBS) == expected


def test_reaches_protected_through_a_wildcard_glob():
    globs = ("tools/**/BUILD.bazel",)
    assert reaches_protected("tools", globs) == "tools/**/BUILD.bazel"
    assert reaches_protected("tools/deep/dir", globs) == "tools/**/BUILD.bazel"
    assert reaches_protected("oracles", globs) is None
    assert reaches_protected("", ()) is None


LINKS = {
    "a": "b",
    "b": "c/d",
    "c": "oracles",
    "loop1": "loop2",
    "loop2": "loop1",
    "abs": "/etc/passwd",
    "up": "../x",
    "self": ".",
    "dir/l": "../oracles/x",
    "dir/m": "./n/../o",
    "deep/x": "../../..",
}


@pytest.mark.parametrize(
    ("path", "reached"),
    [
        ("a", "oracles/d"),  # a -> b -> c/d, c -> oracles
        ("a/e", "oracles/d/e"),
        ("./a", "oracles/d"),
        ("a/../shop", "oracles/shop"),  # `..` applies after the link, as in a checkout
        ("dir/l", "oracles/x"),  # a target is relative to the link's directory
        ("dir/m", "dir/o"),
        ("self", ""),
        ("plain/file", "plain/file"),
        ("loop1", None),
        ("abs", None),
        ("up", None),
        ("deep/x", None),
        ("..", None),
    ],
)
def test_resolve(path, reached):
    assert resolve(path, LINKS) == reached


def test_resolve_stops_after_the_linux_hop_limit():
    def chain(n: int) -> dict[str, str]:
        return {f"l{i}": f"l{i + 1}" for i in range(n)}

    assert MAX_SYMLINK_HOPS == 40
    assert resolve("l0", chain(40)) == "l40"
    assert resolve("l0", chain(41)) is None


@pytest.mark.parametrize(
    ("path", "target", "expected"),
    [
        ("link", "oracles/x", "is a symlink to 'oracles/x', reaching 'oracles/x' which 'oracles/**' protects"),
        ("link", "Oracles", "is a symlink to 'Oracles', reaching 'Oracles' which 'oracles/**' protects"),
        ("link", ".", "is a symlink to '.', reaching '.' which 'oracles/**' protects"),
        ("link", "/etc", "is a symlink to '/etc', which leaves the repository, is absolute or loops"),
        ("link", "../outside", "is a symlink to '../outside', which leaves the repository, is absolute or loops"),
        ("link", "link", "is a symlink to 'link', which leaves the repository, is absolute or loops"),
        ("link", "shop/calc.py", None),
        ("shop/alias.py", "calc.py", None),
    ],
)
def test_symlink_problem(path, target, expected):
    assert symlink_problem(path, {path: target}, GLOBS) == expected


R, X = Entry(REGULAR, "a" * 40), Entry(EXECUTABLE, "b" * 40)
S, G = Entry(SYMLINK, "c" * 40), Entry(GITLINK, "d" * 40)
SUBMODULE = "is a submodule; its content is invisible to the gate"


@pytest.mark.parametrize(
    ("path", "head", "base", "links", "expected"),
    [
        ("sub", {"sub": G}, {}, {}, SUBMODULE),  # added submodule
        ("sub", {}, {"sub": G}, {}, SUBMODULE),  # removed submodule
        ("sub", {"sub": R}, {"sub": G}, {}, SUBMODULE),  # submodule replaced by a file
        ("f", {"f": X}, {"f": R}, {}, None),  # mode change regular -> executable
        ("f", {"f": R}, {"f": S}, {}, None),  # symlink -> regular file
        ("f", {"f": S}, {"f": R}, {"f": "shop"}, None),  # regular -> harmless symlink
        (
            "f",
            {"f": S},
            {"f": R},
            {"f": "oracles/x"},
            "is a symlink to 'oracles/x', reaching 'oracles/x' which 'oracles/**' protects",
        ),
        ("gone", {}, {"gone": S}, {}, None),  # deleted symlink
        (".gitattributes", {".gitattributes": R}, {}, {}, None),  # a plain file: protected_by's job
        (
            ".gitattributes",
            {".gitattributes": S},
            {},
            {".gitattributes": "shop/a"},
            "is a symlink standing where '.gitattributes' protects content",
        ),
        (
            ".gitmodules",
            {".gitmodules": S},
            {".gitmodules": R},
            {".gitmodules": "shop/m"},
            "is a symlink standing where '.gitmodules' protects content",
        ),
        (
            "tools",
            {"tools": S},
            {},
            {"tools": "shop"},
            "is a symlink standing where 'tools/**' protects content: a "
            "checkout follows it as a folder, which could hold files 'tools/**' protects",
        ),
        (
            ".github",
            {".github": S},
            {},
            {".github": "tools/ci"},
            "is a symlink to 'tools/ci', reaching 'tools/ci' which 'tools/**' protects",
        ),
    ],
)
def test_special_entry_problem(path, head, base, links, expected):
    assert special_entry_problem(path, head, base, links, GLOBS) == expected


def test_a_symlink_whose_path_could_be_a_folder_of_protected_files_says_so():
    # `shop/tax.py` is no BUILD file, but a symlink there is a folder in a checkout, which could
    # hold `shop/tax.py/BUILD`.
    assert special_entry_problem(
        "shop/tax.py", {"shop/tax.py": S}, {}, {"shop/tax.py": "../x"}, ("shop/**/BUILD",)
    ) == (
        "is a symlink standing where 'shop/**/BUILD' protects content: a checkout follows it as a folder, "
        "which could hold files 'shop/**/BUILD' protects"
    )


def test_no_folder_but_the_root_reaches_the_attributes_files():
    # Git tracks no path beyond a symlink: a linked folder holds no `.gitattributes` git reads.
    for folder in ("shop", "vendor/lib", "billing"):
        assert reaches_protected(folder, ALWAYS_PROTECTED) is None, folder
    assert reaches_protected("", ALWAYS_PROTECTED) == "oracles/**"
    assert reaches_protected("billing/.gitattributes", ALWAYS_PROTECTED) == "**/.gitattributes"
    # A user's own `**/NAME` glob keeps the conservative rule.
    assert reaches_protected("shop", ("**/BUILD",)) == "**/BUILD"


def test_a_nested_attributes_file_as_a_symlink_or_a_link_to_one():
    path = "billing/.gitattributes"
    assert protected_by(path, ALWAYS_PROTECTED) == "**/.gitattributes"
    assert special_entry_problem(path, {path: S}, {}, {path: "../harness/a"}, ALWAYS_PROTECTED) == (
        "is a symlink standing where '**/.gitattributes' protects content"
    )
    assert special_entry_problem(
        "harness/a", {"harness/a": S}, {}, {"harness/a": "../billing/.gitattributes"}, ALWAYS_PROTECTED
    ) == (
        "is a symlink to '../billing/.gitattributes', reaching "
        "'billing/.gitattributes' which '**/.gitattributes' protects"
    )
    assert special_entry_problem("shop/v", {"shop/v": S}, {}, {"shop/v": "../billing"}, ALWAYS_PROTECTED) is None
