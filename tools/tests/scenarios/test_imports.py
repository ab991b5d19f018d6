"""The gate's folders are its architecture, and their import rules hold (docs/design.md section 1).

The import graph is computed from the source: every `import tools.oracle_gate...` and
`from tools.oracle_gate... import name` of every module, `name` counting as a module when it is
one. Every module also imports on its own in a fresh interpreter (no import-time effects).
"""

from __future__ import annotations

import ast
import pathlib
import re
import subprocess
import sys

import pytest

import tools.oracle_gate

PACKAGE = "tools.oracle_gate"
ROOT = pathlib.Path(tools.oracle_gate.__file__).parent
REPO = ROOT.parent.parent


def _module_name(path: pathlib.Path, repo: pathlib.Path) -> str:
    parts = path.relative_to(repo).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str, repo: pathlib.Path) -> bool:
    path = repo / name.replace(".", "/")
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imports(source: str, repo: pathlib.Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "tools":
            found.update(f"tools.{a.name}" for a in node.names if f"tools.{a.name}".startswith(PACKAGE))
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(PACKAGE))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith(PACKAGE):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if _is_module(full, repo) else node.module)
    return found


def import_graph(repo: pathlib.Path = REPO) -> dict[str, set[str]]:
    """Module name -> the gate modules it imports (the package itself left out), for the package
    under `repo`."""
    graph = {}
    for path in sorted((repo / PACKAGE.replace(".", "/")).rglob("*.py")):
        name = _module_name(path, repo)
        graph[name] = {m for m in _imports(path.read_text(), repo) if m not in (name, PACKAGE)}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle (strongly connected component of more than one module, or a module that
    imports itself), each sorted; Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for dep in graph.get(node, ()):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def folder(module: str) -> str:
    """The first name under the package: `spec` for `tools.oracle_gate.spec.schema`, `check` for
    `tools.oracle_gate.check`."""
    rest = module[len(PACKAGE) + 1:]
    return rest.split(".")[0]


# Folder -> the folders and top-level modules its modules may import (docs/design.md section 1).
RULES = {
    "spec": {"spec", "errors", "text"},
    "git": {"git", "errors"},
    # Who may change what reads trees and policies, not the suite that loads them (no folder circle).
    "approval": {"approval", "git", "spec", "errors", "text"},
    # The checks use no owner's tool (`authoring/`) and know nothing of how the report is rendered.
    "check": {"check", "approval", "git", "runs", "spec", "suite", "errors", "progress", "text"},
    "actions": {"actions", "spec", "errors", "text"},
    "errors": {"text"},
    "text": set(),
    "": set(),  # the package's own __init__.py
}
# The two actions that check an oracle tree's files read it with the suite's own loader (one
# validation path, docs/design.md section 4): they may also import `suite/` and what a loaded
# tree is made of.
ORACLE_FILE_CHECKS = {f"{PACKAGE}.actions.pin_check", f"{PACKAGE}.actions.manifest_test"}
ORACLE_FILE_CHECK_EXTRA = {f"{PACKAGE}.suite.loader", f"{PACKAGE}.suite.manifest", f"{PACKAGE}.approval.policy",
                           f"{PACKAGE}.git.tree"}


def rule_violations(graph: dict[str, set[str]]) -> list[str]:
    """One line per import that breaks a folder's rule, or imports `commands/` from outside `cli`
    and `commands/`."""
    bad = []
    for module, deps in sorted(graph.items()):
        allowed = RULES.get(folder(module))
        for dep in sorted(deps):
            if (allowed is not None and folder(dep) not in allowed and not (
                    module in ORACLE_FILE_CHECKS and dep in ORACLE_FILE_CHECK_EXTRA)) or (
                    folder(dep) == "commands" and folder(module) not in ("commands", "cli")):
                bad.append(f"{module} imports {dep}")
    return bad


GRAPH = import_graph()
MODULES = sorted(m for m in GRAPH if not m.endswith("__main__"))


def test_the_package_has_no_import_circle():
    assert circles(GRAPH) == []


def test_each_folder_imports_only_what_its_rule_allows():
    assert rule_violations(GRAPH) == []


def test_the_checks_catch_a_circle_and_a_broken_rule(tmp_path):
    # The same checks, on a package with one deliberate violation of each kind.
    pkg = tmp_path / "tools" / "oracle_gate"
    for sub in ("spec", "git", "commands"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "spec" / "a.py").write_text("from tools.oracle_gate.spec import b\n")
    (pkg / "spec" / "b.py").write_text("from tools.oracle_gate.spec.a import x\nimport tools.oracle_gate.git.c\n")
    (pkg / "text.py").write_text("")
    (pkg / "git" / "c.py").write_text("from tools.oracle_gate import text\n")
    (pkg / "commands" / "d.py").write_text("")
    (pkg / "check.py").write_text("from tools.oracle_gate.commands import d\n")
    graph = import_graph(tmp_path)
    assert circles(graph) == [[f"{PACKAGE}.spec.a", f"{PACKAGE}.spec.b"]]
    assert rule_violations(graph) == [
        f"{PACKAGE}.check imports {PACKAGE}.commands.d",
        f"{PACKAGE}.git.c imports {PACKAGE}.text",
        f"{PACKAGE}.spec.b imports {PACKAGE}.git.c",
    ]


@pytest.mark.parametrize("module", MODULES)
def test_module_imports_alone(module):
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True,
                          env={"PYTHONPATH": ":".join(sys.path)}, check=False)
    assert proc.returncode == 0, proc.stderr


def test_gate_uses_only_the_standard_library():
    allowed_roots = {"tools"} | set(sys.stdlib_module_names)
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] in allowed_roots | {"__future__"}, f"{path}: imports {name}"


def test_the_cli_loads_all_of_check_before_running_anything():
    # A harness run by `check` could rewrite the gate's files on disk; every module `check` uses
    # must already be in memory by then. Only what Bazel runs inside the build (`actions/`) and the
    # `python -m` entry point are left out.
    code = ("import sys, tools.oracle_gate.cli; "
            "print(sorted(m for m in sys.modules if m.startswith('tools.oracle_gate')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": ":".join(sys.path)})
    loaded = set(eval(proc.stdout))  # noqa: S307 - our own repr of a list of str
    assert {m for m in MODULES if folder(m) != "actions"} - loaded == set()


def _caller_side() -> list[str]:
    """The files of the caller binary, as `oracle_test` declares them (run next to production code,
    with only the production library on the path)."""
    bzl = (REPO / "tools/bazel/private/oracle_test.bzl").read_text()
    srcs = re.search(r'name = name \+ "\.caller",\s*srcs = \[([^\]]*)\]', bzl)
    assert srcs, "oracle_test.bzl declares no caller binary"
    return re.findall(r'_action\("([a-z_]+\.py)"\)', srcs.group(1))


def test_the_caller_side_imports_nothing_of_the_gate():
    names = _caller_side()
    assert names, "the caller binary has no files"
    for name in names:
        for node in ast.walk(ast.parse((ROOT / "actions" / name).read_text())):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0 and node.module and node.module.split(".")[0] in sys.stdlib_module_names | {
                    "__future__"}, f"{name}: imports {node.module}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name.split(".")[0] in sys.stdlib_module_names, f"{name}: imports {alias.name}"


def test_the_judge_imports_no_production_harness_or_third_party_code():
    code = ("import sys, runpy; sys.argv=['judge', '--help']\n"
            "try:\n    runpy.run_module('tools.oracle_gate.actions.judge', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules))")
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": ":".join(sys.path)})
    loaded = set(eval(proc.stdout.strip().splitlines()[-1]))  # noqa: S307 - our own repr of a list of str
    roots = {m.split(".")[0] for m in loaded}
    # -S: the host's site-packages hooks are not the judge's doing.
    assert roots <= set(sys.stdlib_module_names) | {"tools", "__main__"}, roots
    gate = {m for m in loaded if m.startswith(PACKAGE + ".")}
    assert {folder(m) for m in gate} <= RULES["actions"], sorted(gate)


# A function longer than this is split into named steps (docstring included).
MAX_FUNCTION_LINES = 60


def test_no_function_of_the_gate_is_over_the_limit():
    long = [f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for path in sorted(ROOT.rglob("*.py")) for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert long == []


# The only module that imports by name at run time: the caller imports the production entries.
DYNAMIC_IMPORT_ALLOWED = {f"{PACKAGE}.actions.caller"}
_DYNAMIC = {"__import__", "import_module", "run_module", "run_path", "spec_from_file_location", "exec", "eval"}


def _import_tricks(source: str) -> list[str]:
    """Relative imports and calls that import by name (`importlib.import_module`, `__import__`,
    `runpy`, `exec`, ...): imports the graph above could not see."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            found.append(f"line {node.lineno}: relative import")
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in _DYNAMIC:
                found.append(f"line {node.lineno}: {name}()")
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                a.name.split(".")[0] in ("importlib", "runpy") for a in getattr(node, "names", [])) or (
                isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("importlib", "runpy")):
            found.append(f"line {node.lineno}: imports importlib or runpy")
    return found


def test_every_import_of_the_gate_is_one_the_graph_sees():
    tricks = {name: found for path in sorted(ROOT.rglob("*.py"))
              if (name := _module_name(path, REPO)) not in DYNAMIC_IMPORT_ALLOWED
              and (found := _import_tricks(path.read_text()))}
    assert tricks == {}


def test_the_trick_finder_sees_what_the_graph_would_miss():
    assert _import_tricks("from ..git import gitio\n") == ["line 1: relative import"]
    assert _import_tricks("import importlib\nimportlib.import_module('tools.oracle_gate.git.gitio')\n") == [
        "line 1: imports importlib or runpy", "line 2: import_module()"]
    assert _import_tricks("m = __import__('tools.oracle_gate.git.gitio')\n") == ["line 1: __import__()"]
    assert _imports("from tools import oracle_gate\n", REPO) == {PACKAGE}
