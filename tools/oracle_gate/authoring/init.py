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
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["BEGIN", "END", "MODES", "DEBIAN_RULES", "Setup", "InitResult", "choose_mode", "gate_path_for", "ignored", "init", "negations"]

from tools.oracle_gate.authoring import init_text as text
from tools.oracle_gate.authoring.init_text import Setup
from tools.oracle_gate.errors import GateError, UsageError
from tools.oracle_gate.git.gitio import git_env
from tools.oracle_gate.suite.manifest import write_manifest
from tools.oracle_gate.git.tree import WorkTree

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
        raise UsageError(f"--mode {asked}: {repo} already uses Bazel in {found} mode "
                         f"({'MODULE.bazel' if has_module else 'WORKSPACE'})")
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


def _append_block(repo: str, rel: str, content: str, result: InitResult, head: str = "") -> None:
    """Appends `content` between the markers to `rel` (made, starting with `head`, when missing),
    unless the file has the markers already."""
    path = os.path.join(repo, rel)
    existing = head
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            existing = f.read()
    if BEGIN in existing:
        result.kept.append(rel)
        return
    separator = "" if not existing or existing.endswith("\n\n") else ("\n" if existing.endswith("\n") else "\n\n")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(existing + separator + f"{BEGIN}\n{content.rstrip()}\n{END}\n")
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


def init(repo: str, setup: Setup, packages: Sequence[str], deps: Sequence[str]) -> InitResult:
    """Adds the gate to the repository `repo`; see the module doc.

    Args:
        repo: the repository's root (a git work tree).
        setup: how it uses Bazel (`choose_mode`, `gate_path_for`).
        packages: production packages for the policy (may be empty: fill it in later).
        deps: production `py_library` labels for the oracle tests.

    Raises:
        UsageError: (exit 1) when a package or label is malformed.
        GateError: (exit 1) when a file cannot be written.
    """
    _validate(packages, deps)
    result = InitResult()
    name = text.repository_name(os.path.basename(os.path.realpath(repo)))
    try:
        if setup.mode == "bzlmod":
            existing = _read(os.path.join(repo, "MODULE.bazel"))
            _append_block(repo, "MODULE.bazel", text.module_lines(setup, existing), result,
                          head=f'module(name = "{name}")\n')
        else:
            workspace = "WORKSPACE.bazel" if os.path.exists(os.path.join(repo, "WORKSPACE.bazel")) else "WORKSPACE"
            existing = _read(os.path.join(repo, workspace))
            _append_block(repo, workspace, text.workspace_lines(setup, existing), result,
                          head=f'workspace(name = "{name}")\n')
        _append_block(repo, ".bazelrc", text.bazelrc_lines(setup), result)
        _append_block(repo, ".gitignore", text.GITIGNORE, result)
        _append_block(repo, ".gitattributes", text.GITATTRIBUTES, result)
        _oracles(repo, packages, deps, result)
        _unignore(repo, result)
    except OSError as exc:
        raise GateError(f"init could not write in {repo}: {exc}") from None
    if not setup.debian_rules and setup.mode == "workspace":
        result.notes.append(f"{DEBIAN_RULES}/java is missing: rules_java comes from Bazel's download (install "
                            "Debian's bazel-rules-java to build offline)")
    return result


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
        proc = subprocess.run(["git", "-C", repo, "check-ignore", "-v", "-z", "--stdin"],
                              input="\0".join(paths).encode("utf-8", "surrogateescape") + b"\0",
                              capture_output=True, env=git_env(os.environ), check=False)
    except OSError as exc:
        raise GateError(f"init cannot run git check-ignore: {exc}") from None
    if proc.returncode not in (0, 1):
        first = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GateError(f"git check-ignore failed in {repo}: {first[0] if first else proc.returncode}")
    fields = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    out: dict[str, str] = {}
    for source, line, pattern, path in zip(fields[0::4], fields[1::4], fields[2::4], fields[3::4]):
        if not pattern.startswith("!"):
            out[path] = f"{source}:{line}:{pattern}"
    return out


def negations(paths: Sequence[str]) -> list[str]:
    """The `.gitignore` lines that re-include `paths` (relative, `/`-separated): each folder on the
    way (git cannot re-include a file whose folder is excluded: gitignore(5)), then the file, each
    anchored at the root (`!/oracles/`, `!/oracles/policy.toml`), in order, once."""
    lines: list[str] = []
    for path in paths:
        parts = path.split("/")
        lines.extend(f"!/{'/'.join(parts[:n])}/" for n in range(1, len(parts)))
        lines.append(f"!/{path}")
    return list(dict.fromkeys(lines))


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
        block = "# Files the gate needs committed, which a rule above ignores.\n" + "".join(f"{line}\n" for line in lines)
        end = existing.rfind(END)
        if end < 0:  # the block's end marker was removed by hand: the lines go last
            existing += "" if existing.endswith("\n") or not existing else "\n"
            end = len(existing)
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(existing[:end] + block + existing[end:])
        if ".gitignore" not in result.written:
            result.written.append(".gitignore")
        result.notes.append("the repository's ignore rules excluded " + ", ".join(
            f"{rel} ({found[rel]})" for rel in sorted(found)) + "; .gitignore's oracle-gate block re-includes them")
    for rel, rule in sorted(ignored(repo, sorted(found)).items()):
        result.notes.append(f"{rel} is still ignored ({rule}), which a negation in .gitignore cannot undo: "
                            f"`git add -f {rel}` or change that rule")


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return ""
