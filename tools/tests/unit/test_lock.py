"""authoring/lock.py and `init --requirements`: a requirements.in resolved by pip into a lock of
pins and hashes only, the modules each locked wheel gives, the py_library init writes from a
package's imports, the WORKSPACE and MODULE.bazel blocks that install the lock, and the refusals.
pip resolves from a folder of wheels the test makes (`PIP_NO_INDEX`, `PIP_FIND_LINKS`), so nothing
depends on an index."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from tools.lock.lock_check import line_problems
from tools.oracle_gate.authoring import lock
from tools.oracle_gate.authoring.init import BEGIN, END
from tools.oracle_gate.authoring.init_text import DEPS_BEGIN
from tools.testing.gitrepo import GitRepo


def wheel(
    folder: Path, name: str, version: str, modules: list[str], requires: tuple[str, ...] = (), top_level: bool = False
) -> None:
    dist_info = f"{name}-{version}.dist-info"
    files = {f"{m}/__init__.py": f"X = {m!r}\n" for m in modules}
    files[f"{dist_info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    files[f"{dist_info}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    if top_level:
        files[f"{dist_info}/top_level.txt"] = "\n".join(modules) + "\n"
    files[f"{dist_info}/RECORD"] = "".join(f"{p},,\n" for p in files) + f"{dist_info}/RECORD,,\n"
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as z:
        for path, text in files.items():
            z.writestr(path, text)


@pytest.fixture
def index(tmp_path) -> dict[str, str]:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    wheel(wheels, "alpha_dist", "1.0", ["alpha"], ("beta-dist>=2",))
    wheel(wheels, "beta_dist", "2.1", ["beta", "beta_extra"], top_level=True)
    wheel(wheels, "beta_dist", "1.0", ["beta"])
    wheel(wheels, "gamma", "3.0", ["gamma"])
    return {
        **os.environ,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheels),
        "PIP_NO_CACHE_DIR": "1",
        "PIP_CONSTRAINT": "",
        "HOME": str(tmp_path),
    }


def test_a_requirements_file_resolves_to_pins_and_hashes_of_every_distribution(tmp_path, index):
    req = tmp_path / "requirements.in"
    req.write_text("alpha-dist  # the one we call\ngamma>=2\n")
    pins = lock.resolve(str(req), index)
    assert [(p.name, p.version) for p in pins] == [("alpha_dist", "1.0"), ("beta_dist", "2.1"), ("gamma", "3.0")]
    text = lock.lock_text(pins, "requirements.in")
    assert not line_problems(text) and lock.is_lock(text) and lock.source_of(text) == "requirements.in"
    assert str(tmp_path) not in text
    assert f"beta_dist==2.1 \\\n    --hash=sha256:{pins[1].sha256}\n" in text


@pytest.mark.parametrize(
    "line, why",
    [
        ("-e ./lib", "is not a requirement of a distribution by name"),
        ("--index-url https://example.invalid/simple", "is not a requirement"),
        ("git+https://example.invalid/x.git", "is not a requirement"),
        ("./vendored", "is not a requirement"),
    ],
)
def test_options_urls_and_paths_are_refused_naming_the_line(tmp_path, index, line, why):
    req = tmp_path / "requirements.in"
    req.write_text(f"gamma\n{line}\n")
    with pytest.raises(lock.LockError, match=rf"requirements.in line 2: .*{why}"):
        lock.resolve(str(req), index)


def test_what_pip_cannot_resolve_is_one_line_with_pips_reason(tmp_path, index):
    req = tmp_path / "requirements.in"
    req.write_text("no-such-dist\n")
    with pytest.raises(lock.LockError) as caught:
        lock.resolve(str(req), index)
    assert "pip could not resolve it: ERROR:" in str(caught.value) and "\n" not in str(caught.value)


def test_a_lock_without_hashes_is_not_a_lock():
    assert not lock.is_lock("gamma==3.0\n")
    assert not lock.is_lock("# nothing\n")
    assert lock.is_lock("gamma==3.0 \\\n    --hash=sha256:" + "a" * 64 + "\n")


def test_each_wheel_gives_its_modules_and_imports_map_to_distributions(tmp_path, index):
    req = tmp_path / "requirements.in"
    req.write_text("alpha-dist\n")
    path = tmp_path / "requirements_lock.txt"
    path.write_text(lock.lock_text(lock.resolve(str(req), index), "requirements.in"))
    modules = lock.modules_of(str(path), index)
    assert modules == {"alpha": "alpha-dist", "beta": "beta-dist", "beta_extra": "beta-dist"}
    pkg = tmp_path / "shop"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("import json\nfrom alpha import X\nfrom . import sub\n")
    (pkg / "sub" / "__init__.py").write_text("import beta_extra.deep, shop.sub, yaml\nimport __future__\n")
    (pkg / "broken.py").write_text("def (:\n")
    assert lock.third_party(lock.imports_of(str(pkg)), "shop", modules) == (["alpha-dist", "beta-dist"], ["yaml"])


def library(tmp_path: Path, mode: str, index: dict[str, str], gate, extra: tuple[str, ...] = ()) -> tuple[GitRepo, str]:
    repo = GitRepo(tmp_path / "lib")
    control = {"workspace": "WORKSPACE", "bzlmod": "MODULE.bazel"}[mode]
    repo.write(control, "")
    repo.write("src/shop/__init__.py", "import alpha\nimport importlib.metadata\n")
    repo.write("src/shop/calc.py", "import gamma\n")
    repo.write("requirements.in", "alpha-dist\ngamma\n")
    repo.write(
        "pyproject.toml", '[project]\nname = "shop"\nversion = "2.0.1"\n[project.scripts]\nshop = "shop.calc:main"\n'
    )
    code, out, err = gate(
        "--repo",
        str(repo.path),
        "init",
        "--package",
        "shop",
        "--requirements",
        str(repo.path / "requirements.in"),
        "--bazel",
        "7",
        *extra,
        environ=index,
    )
    assert code == 0, out + err
    return repo, out


@pytest.mark.parametrize("mode", ["workspace", "bzlmod"])
def test_init_requirements_writes_the_lock_its_wiring_and_the_library_once(tmp_path, index, gate, mode):
    repo, out = library(tmp_path, mode, index, gate)
    for rel in ("requirements_lock.txt", "BUILD.bazel", "src/shop/BUILD.bazel"):
        assert f"init: wrote {rel}" in out, out
    assert lock.is_lock(repo.read("requirements_lock.txt").decode())
    build = repo.read("src/shop/BUILD.bazel").decode()
    assert 'deps = [":shop_dist", requirement("alpha-dist"), requirement("gamma")],' in build, build
    assert 'imports = [".."],' in build and 'dist_name = "shop",' in build and 'version = "2.0.1",' in build
    assert '"console_scripts": ["shop = shop.calc:main"]' in build
    control = repo.read("MODULE.bazel" if mode == "bzlmod" else "WORKSPACE").decode()
    block = control[control.index(DEPS_BEGIN) :]
    assert block.index(DEPS_BEGIN) < block.index(END) and control.index(BEGIN) < control.index(DEPS_BEGIN)
    if mode == "bzlmod":
        assert 'checked_lock.lock(name = "pypi_lock", lock = "//:requirements_lock.txt")' in block
        assert 'requirements_lock = "@pypi_lock//:requirements_lock.txt"' in block
    else:
        assert 'python_dependencies(name = "pypi", lock = "//:requirements_lock.txt")' in block
    assert 'deps = ["//src/shop"]' in repo.read("oracles/BUILD.bazel").decode()
    before = {
        p: (repo.path / p).read_bytes()
        for p in (
            "requirements_lock.txt",
            "src/shop/BUILD.bazel",
            "WORKSPACE" if mode == "workspace" else "MODULE.bazel",
        )
    }
    code, again, _ = gate(
        "--repo",
        str(repo.path),
        "init",
        "--package",
        "shop",
        "--requirements",
        str(repo.path / "requirements.in"),
        "--bazel",
        "7",
        environ=index,
    )
    assert code == 0 and "nothing to do" in again, again
    assert before == {p: (repo.path / p).read_bytes() for p in before}


def test_a_dist_name_that_is_not_the_projects_and_bad_requirements_write_nothing(tmp_path, index, gate):
    repo = GitRepo(tmp_path / "lib")
    repo.write("WORKSPACE", "")
    repo.write("shop/__init__.py", "")
    repo.write("pyproject.toml", '[project]\nname = "shop"\nversion = "1"\n')
    repo.write("requirements.in", "no-such-dist\n")
    before = sorted(p.name for p in repo.path.iterdir())
    code, out, err = gate(
        "--repo", str(repo.path), "init", "--package", "shop", "--dist-name", "other", "--bazel", "4", environ=index
    )
    assert code == 1 and "--dist-name 'other' does not match pyproject.toml's name 'shop'" in err, err
    code, out, err = gate(
        "--repo",
        str(repo.path),
        "init",
        "--package",
        "shop",
        "--requirements",
        str(repo.path / "requirements.in"),
        "--bazel",
        "4",
        environ=index,
    )
    assert code == 1 and "requirements.in: pip could not resolve it" in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in repo.path.iterdir()) == before


def test_the_lock_command_refreshes_the_lock_from_its_source(tmp_path, index, gate):
    repo, _ = library(tmp_path, "workspace", index, gate)
    code, out, _ = gate("--repo", str(repo.path), "lock", environ=index)
    assert code == 0 and "is up to date with requirements.in" in out, out
    repo.write("requirements.in", "alpha-dist\n")
    code, out, _ = gate("--repo", str(repo.path), "lock", environ=index)
    assert code == 0 and "lock: gamma 3.0 -> -" in out and "wrote requirements_lock.txt" in out, out
    assert "gamma" not in repo.read("requirements_lock.txt").decode()


def test_the_lock_command_writes_no_link_and_reads_no_source_outside_the_repository(tmp_path, index, gate):
    repo, _ = library(tmp_path, "workspace", index, gate)
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET-token\n")
    lock_path = repo.path / "requirements_lock.txt"
    text = lock_path.read_text()
    lock_path.write_text(text.replace("# source: requirements.in", "# source: ../secret.txt"))
    code, out, err = gate("--repo", str(repo.path), "lock", environ=index)
    assert code == 1 and "names the source '../secret.txt', which is not a file of the repository" in err, err
    assert "TOPSECRET" not in out + err
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    lock_path.unlink()
    lock_path.symlink_to(victim)
    code, out, err = gate("--repo", str(repo.path), "lock", environ=index)
    assert code == 1 and "requirements_lock.txt is a symbolic link" in err, err
    assert victim.read_text() == "keep\n"


def test_a_relative_requirements_file_is_the_repositorys_whatever_the_current_directory(
    tmp_path, index, gate, monkeypatch
):
    # The gate runs from its own checkout, which has a requirements.in of its own: a relative
    # --requirements is read from --repo's root, as `git -C` reads paths.
    elsewhere = tmp_path / "gate-checkout"
    elsewhere.mkdir()
    (elsewhere / "requirements.in").write_text("no-such-dist\n")
    monkeypatch.chdir(elsewhere)
    repo = GitRepo(tmp_path / "lib")
    repo.write("WORKSPACE", "")
    repo.write("shop/__init__.py", "import alpha\n")
    repo.write("requirements.in", "alpha-dist\n")
    args = ("--repo", str(repo.path), "init", "--package", "shop", "--bazel", "4")
    code, out, err = gate(*args, "--requirements", "requirements.in", environ=index)
    assert code == 0, err
    lock = repo.read("requirements_lock.txt").decode()
    assert "# source: requirements.in\n" in lock and "alpha_dist==" in lock, lock
    code, out, err = gate("--repo", str(repo.path), "lock", "--requirements", "requirements.in", environ=index)
    assert code == 0 and "is up to date with requirements.in" in out, out + err


def test_a_requirements_file_outside_the_repository_is_refused_and_nothing_is_written(tmp_path, index, gate):
    repo = GitRepo(tmp_path / "lib")
    repo.write("WORKSPACE", "")
    repo.write("shop/__init__.py", "")
    outside = tmp_path / "requirements.in"
    outside.write_text("alpha-dist\n")
    before = sorted(p.name for p in repo.path.iterdir())
    for relative in (str(outside), "../requirements.in"):
        code, out, err = gate(
            "--repo",
            str(repo.path),
            "init",
            "--package",
            "shop",
            "--requirements",
            relative,
            "--bazel",
            "4",
            environ=index,
        )
        assert code == 1 and "is not a file of the repository" in err and len(err.strip().splitlines()) == 1, err
        assert sorted(p.name for p in repo.path.iterdir()) == before
