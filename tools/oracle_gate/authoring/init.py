"""`init`: adds the gate to a repository, idempotently (docs/ci.md, "Adopting the gate").

It writes what is missing and leaves what is there:
- `MODULE.bazel` (bzlmod) or `WORKSPACE` when the repository has neither (`Setup.mode`);
- `oracles/policy.toml` (the label, the protected paths, the production packages given),
  `oracles/BUILD.bazel` (`oracle_suites` over the oracle files, one test per file),
  `oracles/example.toml.sample` (a commented example row; not an oracle file until renamed),
  and `oracles/MANIFEST.sha256`, generated; all four only when `oracles/policy.toml` is new, so a
  file deleted after the first run stays deleted;
- blocks between marker lines (`BEGIN`, `END`), each written once: the dependency on oracle-gate in
  `MODULE.bazel` or `WORKSPACE`, `.bazelrc` (the flags of docs/ci.md, "What init writes"),
  `.gitignore` (Bazel's output links) and `.gitattributes` (`oracles/` byte-exact);
- inside its `.gitignore` block, a negation of each file it wrote that the repository's ignore
  rules exclude (`git check-ignore`), so that the change adding the gate commits them.

Nothing it writes holds an absolute path of this machine but the system's packaged rule sets
(`/usr/share/bazel/...`, Debian's): the dependency is a path relative to the repository.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "BEGIN",
    "END",
    "MODES",
    "DEBIAN_RULES",
    "Setup",
    "InitResult",
    "choose_mode",
    "gate_path_for",
    "ignored",
    "init",
    "negations",
]

from tools.oracle_gate.authoring import init_text as text
from tools.oracle_gate.authoring import lock as lock_mod
from tools.oracle_gate.authoring.dist_metadata import dist_metadata
from tools.oracle_gate.authoring.init_text import DistMetadata, Setup
from tools.oracle_gate.errors import GateError, UsageError
from tools.oracle_gate.git.gitio import git_env
from tools.oracle_gate.git.tree import WorkTree
from tools.oracle_gate.suite.manifest import write_manifest

BEGIN = "# --- oracle-gate (init) ---"
END = "# --- end oracle-gate ---"
MODES = ("workspace", "bzlmod")
# Debian's packaged rule sets (bazel-rules-java on Debian 12; all of them on Debian sid).
DEBIAN_RULES = "/usr/share/bazel/rules"


@dataclass
class InitResult:
    """What `init` did: the files it wrote or extended, and those it found already set up."""

    written: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def choose_mode(repo: str, asked: str | None, bazel_major: int) -> str:
    """The mode of `repo`: bzlmod when it has `MODULE.bazel`, workspace when it has `WORKSPACE` or
    `WORKSPACE.bazel`; with neither, `asked`, else bzlmod on Bazel 7 and later and workspace before.

    Raises:
        UsageError: (exit 1) when `asked` contradicts the file the repository has.
    """
    has_module = os.path.exists(os.path.join(repo, "MODULE.bazel"))
    has_workspace = any(os.path.exists(os.path.join(repo, n)) for n in ("WORKSPACE", "WORKSPACE.bazel"))
    found = "bzlmod" if has_module else "workspace" if has_workspace else None
    if asked is not None and found is not None and asked != found:
        raise UsageError(
            f"--mode {asked}: {repo} already uses Bazel in {found} mode "
            f"({'MODULE.bazel' if has_module else 'WORKSPACE'})"
        )
    return found or asked or ("bzlmod" if bazel_major >= 7 else "workspace")


def gate_path_for(repo: str, gate_root: str, asked: str | None) -> str:
    """The oracle-gate checkout as the repository's dependency names it: `asked` (`--gate-path`,
    which must be relative), else `gate_root` relative to `repo`.

    Raises:
        UsageError: (exit 1) for an absolute or quoted `asked`.
    """
    if asked is not None:
        if os.path.isabs(asked) or re.search(r"[\"'\\\n]", asked):
            raise UsageError(f"--gate-path {asked!r}: give a path relative to the repository, e.g. ../oracle-gate")
        return asked
    return os.path.relpath(os.path.realpath(gate_root), os.path.realpath(repo))


def _validate(packages: Sequence[str], deps: Sequence[str]) -> None:
    for package in packages:
        if not package.isidentifier():
            raise UsageError(f"--package {package!r} is not a Python package name")
    for label in deps:
        if not label.startswith("//") or '"' in label or "\\" in label:
            raise UsageError(f"--dep {label!r} is not a label such as //shop")


def _write_new(repo: str, rel: str, content: str, result: InitResult) -> None:
    path = os.path.join(repo, rel)
    if os.path.lexists(path):
        result.kept.append(rel)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(content)
    result.written.append(rel)


def _append_block(repo: str, rel: str, content: str, result: InitResult, head: str = "", begin: str = BEGIN) -> None:
    """Appends `content` between the markers (`begin`, END) to `rel` (made, starting with `head`,
    when missing), unless the file has the `begin` marker already."""
    path = os.path.join(repo, rel)
    existing = head
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            existing = f.read()
    if begin in existing:
        if rel not in result.kept and rel not in result.written:
            result.kept.append(rel)
        return
    separator = "" if not existing or existing.endswith("\n\n") else ("\n" if existing.endswith("\n") else "\n\n")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(existing + separator + f"{begin}\n{content.rstrip()}\n{END}\n")
    if rel in result.kept:
        result.kept.remove(rel)
    if rel not in result.written:
        result.written.append(rel)


def _oracles(repo: str, packages: Sequence[str], deps: Sequence[str], result: InitResult) -> None:
    """The oracle side: written only on the first run (no `oracles/policy.toml` yet)."""
    if os.path.lexists(os.path.join(repo, "oracles", "policy.toml")):
        result.kept.append("oracles/")
        return
    _write_new(repo, "oracles/policy.toml", text.policy(packages, deps), result)
    _write_new(repo, "oracles/BUILD.bazel", text.oracles_build(deps), result)
    _write_new(repo, "oracles/example.toml.sample", text.EXAMPLE, result)
    write_manifest(WorkTree(repo))
    result.written.append("oracles/MANIFEST.sha256")


def _control_block(repo: str, setup: Setup, result: InitResult) -> None:
    """The oracle-gate block of MODULE.bazel (bzlmod) or WORKSPACE, the file made when missing."""
    name = text.repository_name(os.path.basename(os.path.realpath(repo)))
    if setup.mode == "bzlmod":
        existing = _read(os.path.join(repo, "MODULE.bazel"))
        _append_block(
            repo, "MODULE.bazel", text.module_lines(setup, existing), result, head=f'module(name = "{name}")\n'
        )
        return
    workspace = "WORKSPACE.bazel" if os.path.exists(os.path.join(repo, "WORKSPACE.bazel")) else "WORKSPACE"
    existing = _read(os.path.join(repo, workspace))
    _append_block(repo, workspace, text.workspace_lines(setup, existing), result, head=f'workspace(name = "{name}")\n')


def _metadata_notes(folders: Mapping[str, str | None], notes: Sequence[str], flags: bool, result: InitResult) -> None:
    """The metadata notes of a py_library init wrote; with `flags` (`--dist-name`, `--dist-version`),
    a note naming each package BUILD file that existed already, which the flags do not change."""
    if any(rel.endswith("/BUILD.bazel") and rel != "oracles/BUILD.bazel" for rel in result.written):
        result.notes.extend(notes)
    kept = sorted(
        f"{f}/BUILD.bazel" for f in folders.values() if f is not None and f"{f}/BUILD.bazel" not in result.written
    )
    if flags and kept:
        result.notes.append(
            f"--dist-name and --dist-version go into the BUILD files init writes; {', '.join(kept)} "
            'exists already: edit its py_dist_info (docs/adopting.md, "Package metadata")'
        )


def package_folder(repo: str, package: str) -> str | None:
    """The folder of the production package `package`, relative to `repo`: `package` at the root,
    else `src/package` (the src layout), else None."""
    for rel in (package, f"src/{package}"):
        if os.path.isdir(os.path.join(repo, rel)):
            return rel
    return None


def init(
    repo: str,
    setup: Setup,
    packages: Sequence[str],
    deps: Sequence[str],
    *,
    requirements: str | None = None,
    environ: Mapping[str, str] | None = None,
    dist_name: str | None = None,
    dist_version: str | None = None,
) -> InitResult:
    """Adds the gate to the repository `repo`; see the module doc.

    Args:
        repo: the repository's root (a git work tree).
        setup: how it uses Bazel (`choose_mode`, `gate_path_for`).
        packages: production packages for the policy (may be empty: fill it in later).
        deps: production `py_library` labels for the oracle tests; empty: the label of each
            package's folder (`package_folder`).
        requirements: a requirements.in or a lock (`lock.is_lock`) of the production packages'
            third-party distributions: `requirements_lock.txt` is made from it (`lock.resolve`) and
            installed as `@pypi` (WORKSPACE or MODULE.bazel block), and a package folder without a
            BUILD file gets a `py_library` that depends on what its modules import.
        environ: pip's environment (its index settings), default `os.environ`.
        dist_name, dist_version: the distribution's metadata for the `py_library` init writes
            (`dist_metadata.dist_metadata`: pyproject.toml, these overriding).

    Raises:
        UsageError: (exit 1) when a package or label is malformed, or the requirements cannot be
            locked (`lock.LockError`: one line naming the file and why); nothing is written then.
        GateError: (exit 1) when a file cannot be written.
    """
    _validate(packages, deps)
    result = InitResult()
    folders = {p: package_folder(repo, p) for p in packages}
    if not deps:
        deps = [f"//{folder}" for folder in folders.values() if folder is not None]
    metadata, metadata_notes = dist_metadata(repo, dist_name, dist_version)
    lock = _lock(repo, requirements, environ if environ is not None else os.environ) if requirements else None
    try:
        _control_block(repo, setup, result)
        _append_block(repo, ".bazelrc", text.bazelrc_lines(setup), result)
        _append_block(repo, ".gitignore", text.GITIGNORE, result)
        _append_block(repo, ".gitattributes", text.GITATTRIBUTES, result)
        if lock is not None:
            _wire_lock(repo, setup, lock, result)
        _libraries(repo, folders, lock, environ if environ is not None else os.environ, metadata, result)
        _metadata_notes(folders, metadata_notes, bool(dist_name or dist_version), result)
        _oracles(repo, packages, deps, result)
        _unignore(repo, result)
    except OSError as exc:
        raise GateError(f"init could not write in {repo}: {exc}") from None
    if not setup.debian_rules and setup.mode == "workspace":
        result.notes.append(
            f"{DEBIAN_RULES}/java is missing: rules_java comes from Bazel's download (install "
            "Debian's bazel-rules-java to build offline)"
        )
    return result


@dataclass
class _Lock:
    """The lock `init --requirements` uses: its text, and whether it must be written."""

    text: str
    new: bool


def _lock(repo: str, requirements: str, environ: Mapping[str, str]) -> _Lock:
    """The lock's text, from `requirements` (a lock as it is, else resolved), before anything is
    written. Raises LockError (exit 1)."""
    target = os.path.join(repo, lock_mod.LOCK_NAME)
    if os.path.islink(target):
        raise lock_mod.LockError(f"{lock_mod.LOCK_NAME} is a symbolic link; the lock must be a regular file")
    requirements = lock_mod.requirements_path(repo, requirements)
    try:
        with open(requirements, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise lock_mod.LockError(f"--requirements {requirements}: cannot read it: {exc}") from None
    if lock_mod.is_lock(text):
        same = os.path.exists(target) and os.path.samefile(requirements, target)
        return _Lock(text, not same)
    if os.path.exists(target):
        with open(target, encoding="utf-8") as f:
            return _Lock(f.read(), False)
    source = os.path.relpath(os.path.realpath(requirements), os.path.realpath(repo))
    return _Lock(lock_mod.lock_text(lock_mod.resolve(requirements, environ), source), True)


def _wire_lock(repo: str, setup: Setup, lock: _Lock, result: InitResult) -> None:
    """Writes `requirements_lock.txt` (when new) and the block that installs it as `@pypi`."""
    if lock.new:
        with open(os.path.join(repo, lock_mod.LOCK_NAME), "w", encoding="utf-8", newline="\n") as f:
            f.write(lock.text)
        result.written.append(lock_mod.LOCK_NAME)
    else:
        result.kept.append(lock_mod.LOCK_NAME)
    label = f"//:{lock_mod.LOCK_NAME}"
    if setup.mode == "bzlmod":
        _append_block(repo, "MODULE.bazel", text.module_deps_lines(label), result, begin=text.DEPS_BEGIN)
    else:
        workspace = "WORKSPACE.bazel" if os.path.exists(os.path.join(repo, "WORKSPACE.bazel")) else "WORKSPACE"
        _append_block(repo, workspace, text.workspace_deps_lines(label), result, begin=text.DEPS_BEGIN)
    rc = text.bazelrc_deps_lines(setup)
    if rc:
        _append_block(repo, ".bazelrc", rc, result, begin=text.DEPS_BEGIN)
    if not os.path.lexists(os.path.join(repo, "BUILD.bazel")) and not os.path.lexists(os.path.join(repo, "BUILD")):
        _write_new(repo, "BUILD.bazel", f'exports_files(["{lock_mod.LOCK_NAME}"])\n', result)


def _libraries(
    repo: str,
    folders: Mapping[str, str | None],
    lock: _Lock | None,
    environ: Mapping[str, str],
    metadata: DistMetadata | None,
    result: InitResult,
) -> None:
    """A `py_library` for each production package folder without a BUILD file, depending on the
    locked distributions its modules import (`lock.modules_of`, `lock.third_party`) and, with
    `metadata`, on a `py_dist_info` of the distribution; a note for each imported module no locked
    distribution gives."""
    todo = {
        p: f
        for p, f in folders.items()
        if f is not None and not any(os.path.lexists(os.path.join(repo, f, n)) for n in ("BUILD", "BUILD.bazel"))
    }
    if not todo:
        return
    modules: dict[str, str] = {}
    if lock is not None:
        with tempfile.TemporaryDirectory(prefix="oracle-gate-init-") as tmp:
            path = os.path.join(tmp, lock_mod.LOCK_NAME)
            with open(path, "w", encoding="utf-8") as f:
                f.write(lock.text)
            modules = lock_mod.modules_of(path, environ)
    for package, folder in sorted(todo.items()):
        dists, unknown = lock_mod.third_party(lock_mod.imports_of(os.path.join(repo, folder)), package, modules)
        _write_new(
            repo,
            f"{folder}/BUILD.bazel",
            text.library_build(
                package, folder.startswith("src/"), dists, unknown, metadata, data=_has_data(os.path.join(repo, folder))
            ),
            result,
        )
        if unknown:
            result.notes.append(
                f"{package} imports {', '.join(unknown)}, which no locked distribution gives"
                + ("" if lock is not None else " (pass --requirements)")
                + f": add them to {folder}/BUILD.bazel's deps by hand"
            )


def _has_data(folder: str) -> bool:
    """Whether the package folder holds a file that is neither Python nor Bazel's (`DATA_GLOB`)."""
    for _root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__" and not d.startswith(".")]
        if any(
            not n.endswith((".py", ".pyc", ".bzl")) and n not in ("BUILD", "BUILD.bazel") and not n.startswith(".")
            for n in files
        ):
            return True
    return False


def _files(repo: str, result: InitResult) -> list[str]:
    """The files init wrote or kept, relative to `repo` (a kept `oracles/` counts for its files)."""
    out: list[str] = []
    for rel in (*result.written, *result.kept):
        if rel.endswith("/"):
            folder = os.path.join(repo, rel)
            out.extend(rel + name for name in sorted(os.listdir(folder)) if os.path.isfile(os.path.join(folder, name)))
        elif os.path.isfile(os.path.join(repo, rel)):
            out.append(rel)
    return list(dict.fromkeys(out))


def ignored(repo: str, paths: Sequence[str]) -> dict[str, str]:
    """path -> `SOURCE:LINE:PATTERN` of each of `paths` (relative to `repo`, not tracked) that git's
    ignore rules exclude (`git check-ignore -v`: every `.gitignore`, `.git/info/exclude`, the
    user's `core.excludesFile`); a path a negation re-includes is not there.

    Raises:
        GateError: (exit 1) when git cannot tell (not a repository, git missing).
    """
    if not paths:
        return {}
    try:
        proc = subprocess.run(
            ["git", "-C", repo, "check-ignore", "-v", "-z", "--stdin"],
            input="\0".join(paths).encode("utf-8", "surrogateescape") + b"\0",
            capture_output=True,
            env=git_env(os.environ),
            check=False,
        )
    except OSError as exc:
        raise GateError(f"init cannot run git check-ignore: {exc}") from None
    if proc.returncode not in (0, 1):
        first = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GateError(f"git check-ignore failed in {repo}: {first[0] if first else proc.returncode}")
    fields = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    out: dict[str, str] = {}
    for source, line, pattern, path in zip(fields[0::4], fields[1::4], fields[2::4], fields[3::4], strict=False):
        if not pattern.startswith("!"):
            out[path] = f"{source}:{line}:{pattern}"
    return out


def negations(paths: Sequence[str]) -> list[str]:
    """The `.gitignore` lines that re-include `paths` (relative, `/`-separated): each folder on the
    way (git cannot re-include a file whose folder is excluded: gitignore(5)), then the file, each
    anchored at the root (`!/oracles/`, `!/oracles/policy.toml`), in order, once."""
    lines: list[str] = []
    for path in paths:
        parts = [_literal(part) for part in path.split("/")]
        lines.extend(f"!/{'/'.join(parts[:n])}/" for n in range(1, len(parts)))
        lines.append(f"!/{'/'.join(parts)}")
    return list(dict.fromkeys(lines))


def _literal(name: str) -> str:
    """A path part as a gitignore pattern that matches it alone: `*`, `?`, `[`, `\\` and `!`
    escaped with a backslash, and trailing blanks too (gitignore(5))."""
    out = re.sub(r"([*?\[\\!#])", r"\\\1", name)
    stripped = out.rstrip(" ")
    return stripped + "\\ " * (len(out) - len(stripped))


def _unignore(repo: str, result: InitResult) -> None:
    """Adds to init's `.gitignore` block a negation of each file init wrote or kept that the
    repository's ignore rules exclude (a `.*` rule excludes `.bazelrc` and `.gitattributes`), so
    that the change that adds the gate commits them; says so in a note. A file still excluded after
    that (by `.git/info/exclude`, the user's excludes file, or a folder's own `.gitignore`) is a
    note naming the rule: `git add -f` it, or change the rule."""
    found = ignored(repo, _files(repo, result))
    if not found:
        return
    path = os.path.join(repo, ".gitignore")
    existing = _read(path)
    have = set(existing.splitlines())
    lines = [line for line in negations(sorted(found)) if line not in have]
    if lines:
        block = "# Files the gate needs committed, which a rule above ignores.\n" + "".join(
            f"{line}\n" for line in lines
        )
        end = existing.rfind(END)
        if end < 0:  # the block's end marker was removed by hand: the lines go last
            existing += "" if existing.endswith("\n") or not existing else "\n"
            end = len(existing)
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(existing[:end] + block + existing[end:])
        if ".gitignore" not in result.written:
            result.written.append(".gitignore")
        result.notes.append(
            "the repository's ignore rules excluded "
            + ", ".join(f"{rel} ({found[rel]})" for rel in sorted(found))
            + "; .gitignore's oracle-gate block re-includes them"
        )
    for rel, rule in sorted(ignored(repo, sorted(found)).items()):
        result.notes.append(
            f"{rel} is still ignored ({rule}), which a negation in .gitignore cannot undo: "
            f"`git add -f {rel}` or change that rule"
        )


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return ""
