"""BuildGrid's environment (tools/engine/venv.py) without the network: a hand-made wheel named
`buildgrid`, a hashed lock of it, and pip with no index but that wheel's folder.

What it proves: pip and the environment's Python see nothing of the caller's PYTHONPATH,
PYTHONUSERBASE, PIP_TARGET or PIP_PREFIX (a control shows the same poison breaks a plain install);
an install counts only once verified; a missing module, a marker of another lock or a missing
marker rebuilds the environment with one line saying why; the engine's processes get an
environment from an allowlist.

It needs no nested Bazel: only pip and the environment's own Python run."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tools.engine import venv

VERSION = "0.0.1"
MODULES = ("buildgrid", "buildgrid.server")
POISON = {
    "PYTHONPATH": "poison",
    "PYTHONUSERBASE": "userbase",
    "PYTHONSTARTUP": "poison/startup.py",
    "PIP_TARGET": "pip-target",
    "PIP_PREFIX": "pip-prefix",
}


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def make_wheel(folder: Path, files: dict[str, str]) -> Path:
    """A pure-Python wheel `buildgrid-VERSION-py3-none-any.whl` holding `files` (path -> text)."""
    info = f"buildgrid-{VERSION}.dist-info"
    files = dict(
        files,
        **{
            f"{info}/METADATA": f"Metadata-Version: 2.1\nName: buildgrid\nVersion: {VERSION}\n",
            f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        },
    )
    record = [_record_line(name, text.encode()) for name, text in files.items()] + [f"{info}/RECORD,,"]
    wheel = folder / f"buildgrid-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
        z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel


def plant_installed(site: Path) -> None:
    """An installed-looking `buildgrid` in `site` that fails on import: what pip would take for
    satisfied, and what no verification may accept."""
    (site / "buildgrid").mkdir(parents=True)
    (site / "buildgrid" / "__init__.py").write_text("raise ImportError('the poisoned buildgrid was imported')\n")
    info = site / f"buildgrid-{VERSION}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: buildgrid\nVersion: {VERSION}\n")
    (info / "INSTALLER").write_text("pip\n")
    (info / "RECORD").write_text("")


@pytest.fixture
def world(tmp_path: Path) -> dict[str, object]:
    """A wheel folder, its lock, an empty cache and a poisoned caller environment."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    wheel = make_wheel(wheels, {"buildgrid/__init__.py": "", "buildgrid/server.py": "READY = True\n"})
    lock = tmp_path / "requirements_lock.txt"
    lock.write_text(f"buildgrid=={VERSION} \\\n    --hash=sha256:{hashlib.sha256(wheel.read_bytes()).hexdigest()}\n")
    poison = {name: str(tmp_path / value) for name, value in POISON.items()}
    plant_installed(Path(poison["PYTHONPATH"]))
    Path(poison["PYTHONSTARTUP"]).write_text("raise SystemExit('startup file ran')\n")
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    plant_installed(Path(poison["PYTHONUSERBASE"]) / "lib" / version / "site-packages")
    environ = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "ORACLE_GATE_CACHE": str(tmp_path / "cache"),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheels),
        "PIP_CONFIG_FILE": os.devnull,
        **poison,
    }
    return {"lock": lock, "environ": environ, "poison": poison, "tmp": tmp_path}


def install(world: dict[str, object], lines: list[str]) -> str:
    return venv.buildgrid_python(world["environ"], world["lock"], lines.append, MODULES)  # type: ignore[arg-type]


def test_the_poison_breaks_a_plain_install(world):
    # Control: pip run with the caller's environment takes the planted package for installed.
    folder = Path(str(world["tmp"])) / "plain"
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, env={"PATH": "/usr/bin:/bin"})
    environ = dict(world["environ"])  # type: ignore[arg-type]
    del environ["PIP_TARGET"], environ["PIP_PREFIX"]  # pip refuses these two together with a venv's prefix
    proc = subprocess.run(
        [
            str(folder / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--require-hashes",
            "--no-deps",
            "-r",
            str(world["lock"]),
        ],
        env=environ,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Requirement already satisfied: buildgrid" in proc.stdout, proc.stdout
    assert "No module named 'buildgrid'" in (venv.verify(folder / "bin" / "python", MODULES) or "")


def test_a_poisoned_caller_gets_a_complete_verified_environment(world):
    lines: list[str] = []
    python = install(world, lines)
    folder = Path(python).parent.parent
    assert lines == [
        f"oracle-gate engine: installing BuildGrid's environment in {folder} from {world['lock']}: none yet"
    ]
    assert (
        folder == Path(world["environ"]["ORACLE_GATE_CACHE"]) / f"buildgrid-{VERSION}-{folder.name.rsplit('-', 1)[1]}"
    )  # type: ignore[index]
    assert venv.verify(python, MODULES) is None
    assert (folder / venv.MARKER).read_text() == venv.marker_text(world["lock"])  # type: ignore[arg-type]
    for name in ("PIP_TARGET", "PIP_PREFIX"):
        assert not Path(world["poison"][name]).exists(), name  # type: ignore[index]
    site = next((folder / "lib").glob("python*/site-packages"))
    assert (site / "buildgrid" / "server.py").is_file()
    # A second call finds it installed and says nothing.
    again: list[str] = []
    assert install(world, again) == python and again == []


def test_a_missing_module_is_repaired_by_the_next_call(world):
    python = install(world, [])
    site = next((Path(python).parent.parent / "lib").glob("python*/site-packages"))
    shutil.rmtree(site / "buildgrid")
    lines: list[str] = []
    assert install(world, lines) == python
    assert len(lines) == 1, lines
    assert lines[0].endswith(
        "verification failed: buildgrid: ModuleNotFoundError: No module named 'buildgrid' (and 1 more)"
    ), lines
    assert (site / "buildgrid" / "server.py").is_file()


@pytest.mark.parametrize(
    "marker, reason",
    [
        ("buildgrid[database]==0.4.4", "installed from another lock (marker: buildgrid[database]==0.4.4)"),
        (None, "no install marker (an interrupted install)"),
    ],
)
def test_an_older_or_interrupted_install_is_rebuilt(world, marker, reason):
    python = install(world, [])
    folder = Path(python).parent.parent
    (folder / "leftover").write_text("from the older install")
    if marker is None:
        (folder / venv.MARKER).unlink()
    else:
        (folder / venv.MARKER).write_text(marker)
    lines: list[str] = []
    assert install(world, lines) == python
    assert lines == [
        f"oracle-gate engine: installing BuildGrid's environment in {folder} from {world['lock']}: {reason}"
    ]
    assert not (folder / "leftover").exists()
    assert venv.why_rebuild(folder, world["lock"], MODULES) is None  # type: ignore[arg-type]


def test_a_failed_install_writes_no_marker_and_says_why(world):
    lock = Path(str(world["lock"]))
    lock.write_text(f"buildgrid=={VERSION} \\\n    --hash=sha256:{'0' * 64}\n")  # not the wheel's hash
    with pytest.raises(venv.InstallError, match=r"pip install .*exited with 1"):
        install(world, [])
    folder = venv.venv_folder(world["environ"], lock)  # type: ignore[arg-type]
    assert not (folder / venv.MARKER).exists()


def test_the_engines_processes_and_pip_get_allowlisted_environments():
    caller = {
        "PATH": "/opt/evil/bin",
        "HOME": "/home/u",
        "TMPDIR": "/var/t",
        "PYTHONPATH": "/p",
        "PYTHONHOME": "/h",
        "PYTHONSTARTUP": "/s",
        "PYTHONUSERBASE": "/u",
        "PIP_TARGET": "/t",
        "PIP_PREFIX": "/x",
        "PIP_USER": "1",
        "PIP_INDEX_URL": "file:///idx",
        "HTTPS_PROXY": "http://127.0.0.1:3128",
        "LD_PRELOAD": "/l.so",
    }
    process = venv.process_environment("/srv/engine-part", caller)
    assert process == {
        "PATH": venv.PATH,
        "HOME": "/srv/engine-part",
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "TMPDIR": "/var/t",
    }
    pip = venv.pip_environment(caller)
    assert pip == dict(process, HOME="/home/u", PIP_INDEX_URL="file:///idx", HTTPS_PROXY="http://127.0.0.1:3128")


def test_verify_ignores_the_callers_pythonpath(tmp_path, monkeypatch):
    (tmp_path / "only_on_pythonpath.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    assert "No module named 'only_on_pythonpath'" in (venv.verify(sys.executable, ("only_on_pythonpath",)) or "")
    assert venv.verify(sys.executable, ("json",)) is None  # the standard library lies in the prefix


def test_the_repositorys_lock_pins_buildgrid_with_hashes():
    assert venv.buildgrid_version() == "0.4.4"
    text = venv.LOCK.read_text()
    assert "--hash=sha256:" in text and "index-url" not in text and "find-links" not in text
