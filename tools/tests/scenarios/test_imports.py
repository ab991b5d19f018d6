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
    rest = module[len(PACKAGE) + 1 :]
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
    # The agent-side guard reads the policy and the repository, never a run or the checks.
    "guard": {"guard", "approval", "git", "errors", "text"},
    # The statement is made from a check's report and checked against git alone.
    "attest": {"attest", "check", "git", "errors", ""},
    "errors": {"text"},
    "text": set(),
    "": set(),  # the package's own __init__.py
}
# The two actions that check an oracle tree's files read it with the suite's own loader (one
# validation path, docs/design.md section 4): they may also import `suite/` and what a loaded
# tree is made of.
ORACLE_FILE_CHECKS = {f"{PACKAGE}.actions.pin_check", f"{PACKAGE}.actions.manifest_test"}
ORACLE_FILE_CHECK_EXTRA = {
    f"{PACKAGE}.suite.loader",
    f"{PACKAGE}.suite.manifest",
    f"{PACKAGE}.approval.policy",
    f"{PACKAGE}.git.tree",
    f"{PACKAGE}.git.objects",
}


def rule_violations(graph: dict[str, set[str]]) -> list[str]:
    """One line per import that breaks a folder's rule, or imports `commands/` from outside `cli`
    and `commands/`."""
    bad = []
    for module, deps in sorted(graph.items()):
        allowed = RULES.get(folder(module))
        for dep in sorted(deps):
            if (
                allowed is not None
                and folder(dep) not in allowed
                and not (module in ORACLE_FILE_CHECKS and dep in ORACLE_FILE_CHECK_EXTRA)
            ) or (folder(dep) == "commands" and folder(module) not in ("commands", "cli")):
                bad.append(f"{module} imports {dep}")
    return bad


# What the modules of ORACLE_FILE_CHECK_EXTRA import in turn: the git invocations and checkout
# rewrites a tree is read with (`git/`), and the file writer of `manifest --write` (`files`).
ORACLE_FILE_CHECK_CHAIN = ORACLE_FILE_CHECK_EXTRA | {
    f"{PACKAGE}.git.gitio",
    f"{PACKAGE}.git.transform",
    f"{PACKAGE}.files",
}


def action_chain_violations(graph: dict[str, set[str]]) -> list[str]:
    """One line per module that a module of `actions/` reaches through a chain of imports and that
    the actions' rule does not allow, with the chain (`a -> b -> c`). The oracle-file checks may also
    reach ORACLE_FILE_CHECK_CHAIN; an action that imports an oracle-file check (the worker) is
    checked up to that import, and the check on its own."""
    bad = []
    for action in sorted(m for m in graph if folder(m) == "actions"):
        extra = ORACLE_FILE_CHECK_CHAIN if action in ORACLE_FILE_CHECKS else set()
        chains = {action: [action]}
        todo = [action]
        while todo:
            module = todo.pop(0)
            if module in ORACLE_FILE_CHECKS and module != action:
                continue
            for dep in sorted(graph.get(module, ())):
                if dep in chains:
                    continue
                chains[dep] = [*chains[module], dep]
                if folder(dep) in RULES["actions"] or dep in extra:
                    todo.append(dep)
                else:
                    bad.append(f"{action} reaches {dep}: {' -> '.join(chains[dep])}")
    return bad


GRAPH = import_graph()
MODULES = sorted(m for m in GRAPH if not m.endswith("__main__"))


def folder_graph(graph: dict[str, set[str]]) -> dict[str, dict[str, list[str]]]:
    """Folder -> each other folder its modules import -> the module imports that make the edge
    (`a imports b` lines), for a module graph as `import_graph` returns it."""
    edges: dict[str, dict[str, list[str]]] = {}
    for module, deps in sorted(graph.items()):
        for dep in sorted(deps):
            if folder(dep) != folder(module):
                edges.setdefault(folder(module), {}).setdefault(folder(dep), []).append(f"{module} imports {dep}")
    return edges


def folder_circles(graph: dict[str, set[str]]) -> list[str]:
    """One line per circle of folders (`folders approval, suite: ...` when some module of approval/
    imports suite/ and one of suite/ imports approval/), followed by the module imports between the
    circle's folders."""
    edges = folder_graph(graph)
    found = []
    for circle in circles({a: set(targets) for a, targets in edges.items()}):
        members = set(circle)
        imports = [
            line for a in circle for b, lines in sorted(edges.get(a, {}).items()) if b in members for line in lines
        ]
        found.append(f"folders {', '.join(circle)}: " + "; ".join(imports))
    return found


def test_the_package_has_no_import_circle():
    assert circles(GRAPH) == []


def test_the_folders_have_no_import_circle():
    assert folder_circles(GRAPH) == []


def test_each_folder_imports_only_what_its_rule_allows():
    assert rule_violations(GRAPH) == []


def test_every_module_an_action_reaches_obeys_the_actions_rule():
    assert action_chain_violations(GRAPH) == []


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


def test_the_checks_catch_a_folder_circle_and_an_action_chain(tmp_path):
    # No module circle and no direct import against a rule: a folder circle spec -> git -> spec,
    # and an action that reaches git/ through spec/.
    pkg = tmp_path / "tools" / "oracle_gate"
    for sub in ("spec", "git", "actions"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "actions" / "run.py").write_text("from tools.oracle_gate.spec import v\n")
    (pkg / "spec" / "v.py").write_text("from tools.oracle_gate.git import g\n")
    (pkg / "spec" / "w.py").write_text("")
    (pkg / "git" / "g.py").write_text("from tools.oracle_gate.spec import w\n")
    graph = import_graph(tmp_path)
    assert circles(graph) == []
    assert [line for line in rule_violations(graph) if line.startswith(f"{PACKAGE}.actions")] == []
    assert folder_circles(graph) == [
        f"folders git, spec: {PACKAGE}.git.g imports {PACKAGE}.spec.w; {PACKAGE}.spec.v imports {PACKAGE}.git.g"
    ]
    assert action_chain_violations(graph) == [
        f"{PACKAGE}.actions.run reaches {PACKAGE}.git.g: {PACKAGE}.actions.run -> {PACKAGE}.spec.v -> {PACKAGE}.git.g"
    ]


@pytest.mark.parametrize("module", MODULES)
def test_module_imports_alone(module):
    proc = subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": ":".join(sys.path)},
        check=False,
    )
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
    code = (
        "import sys, tools.oracle_gate.cli; print(sorted(m for m in sys.modules if m.startswith('tools.oracle_gate')))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONPATH": ":".join(sys.path)}
    )
    loaded = set(eval(proc.stdout))
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
                assert (
                    node.level == 0
                    and node.module
                    and node.module.split(".")[0] in sys.stdlib_module_names | {"__future__"}
                ), f"{name}: imports {node.module}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name.split(".")[0] in sys.stdlib_module_names, f"{name}: imports {alias.name}"


def test_the_judge_imports_no_production_harness_or_third_party_code():
    code = (
        "import sys, runpy; sys.argv=['judge', '--help']\n"
        "try:\n    runpy.run_module('tools.oracle_gate.actions.judge', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-S", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": ":".join(sys.path)},
    )
    loaded = set(eval(proc.stdout.strip().splitlines()[-1]))
    roots = {m.split(".")[0] for m in loaded}
    # -S: the host's site-packages hooks are not the judge's doing.
    assert roots <= set(sys.stdlib_module_names) | {"tools", "__main__"}, roots
    gate = {m for m in loaded if m.startswith(PACKAGE + ".")}
    assert {folder(m) for m in gate} <= RULES["actions"], sorted(gate)


# A function longer than this is split into named steps (docstring included), in the gate and in
# the loopback engine (tools/engine).
MAX_FUNCTION_LINES = 60
ENGINE = REPO / "tools" / "engine"


def long_functions(paths: list[pathlib.Path], repo: pathlib.Path) -> list[str]:
    """`path:line name (N lines)` for each function of the files `paths` over MAX_FUNCTION_LINES."""
    return [
        f"{path.relative_to(repo)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path in paths
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]


def test_no_function_of_the_gate_or_the_engine_is_over_the_limit():
    engine = sorted(ENGINE.glob("*.py"))
    assert {path.name for path in engine} >= {"engine.py", "worker.py"}, f"{ENGINE} is incomplete"
    assert long_functions(sorted(ROOT.rglob("*.py")) + engine, REPO) == []


def test_the_length_check_sees_a_long_function(tmp_path):
    body = "".join(f"    x = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))
    (tmp_path / "ok.py").write_text("def fits():\n" + body)
    (tmp_path / "long.py").write_text(
        "import os\n\n\nclass C:\n    def over(self):\n" + body.replace("    ", "        ") + "        return x\n"
    )
    assert long_functions([tmp_path / "ok.py", tmp_path / "long.py"], tmp_path) == [
        f"long.py:5 over ({MAX_FUNCTION_LINES + 1} lines)"
    ]


# Every module of the gate has its unit test, tools/tests/unit/test_<file name>.py (the folder's
# BUILD.bazel), named otherwise in UNIT_TEST_NAMES, or is in WITHOUT_UNIT_TEST with the reason.
UNIT_TESTS = REPO / "tools" / "tests" / "unit"
UNIT_TEST_NAMES = {
    f"{PACKAGE}.runs.flags": "test_run_flags.py",  # `flags` alone says not which
    f"{PACKAGE}.attest.schema": "test_statement.py",  # `schema` is spec/schema.py's
    f"{PACKAGE}.attest.sources": "test_statement.py",
    f"{PACKAGE}.guard.programs": "test_shell.py",  # the programs' words, read through command_words
}
_COMMAND = "a subcommand's arguments and output, around the module it names; run in "
WITHOUT_UNIT_TEST = {
    **{
        f"{PACKAGE}.check.{step}": "a step of check, tested through check's table of contents and its "
        "steps' functions (test_check.py, test_report.py)"
        for step in ("commits", "findings", "inputs", "outcomes", "runs")
    },
    f"{PACKAGE}.check.behaviour_phase": "the behaviour phase's run and report, tested through check "
    "(scenarios/test_behaviour_kept.py) and its plan and comparison (test_behaviour.py)",
    f"{PACKAGE}.runs.launch": "how a run starts Bazel, on the host or in its sealed root, split out of "
    "bazel_run.py (test_bazel_run.py, test_text.py, test_root_session.py)",
    f"{PACKAGE}.git.functions": "the functions of a file a change touched, as coverage and propose use them "
    "(test_coverage.py, test_propose.py)",
    f"{PACKAGE}.__main__": "the `python -m` entry point: the path guard, then cli.main (test_cli.py)",
    f"{PACKAGE}.files": "one function, replace_file, run by `pin --write` and `manifest --write` "
    "(test_pin.py, test_manifest.py)",
    f"{PACKAGE}.progress": "the phase lines and Bazel's relayed output, run by every command (test_cli.py)",
    f"{PACKAGE}.actions.manifest_test": "a Bazel test's main around suite/manifest.py (test_manifest.py); "
    "e2e/test_verdict.py runs it",
    f"{PACKAGE}.actions.reference_check": "an action's main, run as a worker in test_worker.py and by Bazel "
    "in the e2e tests",
    f"{PACKAGE}.approval.change": "the approval step of `check` and `clean-run` (test_check.py, "
    "test_clean_run.py, scenarios/test_decision_table.py)",
    f"{PACKAGE}.approval.github_labels": "read through labels.py (test_labels.py, test_cli.py)",
    f"{PACKAGE}.authoring.init_text": "the texts `init` writes (test_init.py)",
    f"{PACKAGE}.authoring.reference_local": "the reference run of `vacuity` (test_vacuity.py)",
    f"{PACKAGE}.runs.blocks": "what each run hides, read by the runs (test_bazel_run.py, test_workspace_seal.py)",
    f"{PACKAGE}.runs.events": "the Build Event Protocol file of a run (test_bazel_run.py, test_check.py)",
    f"{PACKAGE}.runs.merged_tree": "the checkout of a merge result (scenarios/test_stale_base.py)",
    f"{PACKAGE}.spec.judgement": "what the judge decides (test_judge.py, test_results.py)",
    f"{PACKAGE}.spec.values": "the number and name rules of rows and generators (test_schema.py, test_generate.py)",
    f"{PACKAGE}.suite.hidden_store": "the hidden store, with the hidden phase (test_hidden.py)",
    f"{PACKAGE}.commands.check_cmd": _COMMAND + "test_cli.py and e2e/test_check.py",
    f"{PACKAGE}.commands.clean_run_cmd": _COMMAND + "test_clean_run.py",
    f"{PACKAGE}.commands.compare_cmd": _COMMAND + "test_cli.py",
    f"{PACKAGE}.commands.engine_cmd": _COMMAND + "e2e/test_engine_service.py",
    f"{PACKAGE}.commands.gitlab_labels_cmd": _COMMAND + "test_gitlab_labels.py",
    f"{PACKAGE}.commands.hidden_cmd": _COMMAND + "test_hidden.py and e2e/test_hidden.py",
    f"{PACKAGE}.commands.init_cmd": _COMMAND + "test_init.py",
    f"{PACKAGE}.commands.lock_cmd": _COMMAND + "test_lock.py",
    f"{PACKAGE}.commands.manifest_cmd": _COMMAND + "test_manifest.py and test_cli.py",
    f"{PACKAGE}.commands.pin_cmd": _COMMAND + "test_pin.py",
    f"{PACKAGE}.commands.promote_cmd": _COMMAND + "scenarios/test_promote.py",
    f"{PACKAGE}.commands.propose_cmd": _COMMAND + "test_propose.py",
    f"{PACKAGE}.commands.stop_cmd": _COMMAND + "e2e/test_launcher.py",
    f"{PACKAGE}.commands.vacuity_cmd": _COMMAND + "test_vacuity.py",
    f"{PACKAGE}.commands.guard_cmd": _COMMAND + "test_hook.py and test_install.py",
    f"{PACKAGE}.commands.verify_cmd": _COMMAND + "test_verify.py and e2e/test_check.py",
    f"{PACKAGE}.guard.texts": "the texts `guard install` writes (test_install.py, test_hook.py)",
}


def unit_test_gaps(repo: pathlib.Path, names: dict[str, str], without: dict[str, str]) -> list[str]:
    """One line per module of the package under `repo` (its packages' `__init__.py` left out) that
    has no unit test under tools/tests/unit (`test_<file name>.py`, or the file `names` gives) and is
    not in `without`, and per entry of `without` that names no module or a module that has one."""
    unit = repo / "tools" / "tests" / "unit"
    tests = {path.name for path in unit.glob("test_*.py")}
    modules = {
        _module_name(path, repo)
        for path in (repo / PACKAGE.replace(".", "/")).rglob("*.py")
        if path.name != "__init__.py"
    }
    gaps = []
    for module in sorted(modules):
        test = names.get(module, f"test_{module.rsplit('.', 1)[1]}.py")
        if test not in tests and module not in without:
            gaps.append(f"{module} has no {unit.relative_to(repo) / test}")
        elif test in tests and module in without:
            gaps.append(f"{module} has {unit.relative_to(repo) / test}: take it off the list")
    gaps.extend(f"{module} is listed but is no module" for module in sorted(set(without) - modules))
    return gaps


def test_every_module_has_its_unit_test_or_a_reason():
    assert any(UNIT_TESTS.glob("test_*.py")), f"{UNIT_TESTS} holds no test"
    assert unit_test_gaps(REPO, UNIT_TEST_NAMES, WITHOUT_UNIT_TEST) == []


def test_the_unit_test_check_sees_a_module_without_one(tmp_path):
    for folder_path in ("tools/oracle_gate/spec", "tools/oracle_gate/runs", "tools/tests/unit"):
        (tmp_path / folder_path).mkdir(parents=True)
    for name in ("__init__.py", "spec/__init__.py", "spec/schema.py", "spec/values.py", "runs/flags.py", "cli.py"):
        (tmp_path / "tools/oracle_gate" / name).write_text("")
    for name in ("test_schema.py", "test_run_flags.py", "test_cli.py"):
        (tmp_path / "tools/tests/unit" / name).write_text("")
    names = {f"{PACKAGE}.runs.flags": "test_run_flags.py"}
    assert unit_test_gaps(tmp_path, names, {f"{PACKAGE}.spec.values": "reason"}) == []
    assert unit_test_gaps(tmp_path, {}, {f"{PACKAGE}.cli": "reason", f"{PACKAGE}.gone": "reason"}) == [
        f"{PACKAGE}.cli has tools/tests/unit/test_cli.py: take it off the list",
        f"{PACKAGE}.runs.flags has no tools/tests/unit/test_flags.py",
        f"{PACKAGE}.spec.values has no tools/tests/unit/test_values.py",
        f"{PACKAGE}.gone is listed but is no module",
    ]


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
        elif (
            isinstance(node, (ast.Import, ast.ImportFrom))
            and any(a.name.split(".")[0] in ("importlib", "runpy") for a in getattr(node, "names", []))
            or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("importlib", "runpy"))
        ):
            found.append(f"line {node.lineno}: imports importlib or runpy")
    return found


def test_every_import_of_the_gate_is_one_the_graph_sees():
    tricks = {
        name: found
        for path in sorted(ROOT.rglob("*.py"))
        if (name := _module_name(path, REPO)) not in DYNAMIC_IMPORT_ALLOWED
        and (found := _import_tricks(path.read_text()))
    }
    assert tricks == {}


def test_the_trick_finder_sees_what_the_graph_would_miss():
    assert _import_tricks("from ..git import gitio\n") == ["line 1: relative import"]
    assert _import_tricks("import importlib\nimportlib.import_module('tools.oracle_gate.git.gitio')\n") == [
        "line 1: imports importlib or runpy",
        "line 2: import_module()",
    ]
    assert _import_tricks("m = __import__('tools.oracle_gate.git.gitio')\n") == ["line 1: __import__()"]
    assert _imports("from tools import oracle_gate\n", REPO) == {PACKAGE}


def _names_file(text: str, relative: str) -> bool:
    """Whether `text` names the module at `relative` (`runs/launch.py`, `cli.py`): as `launch.py` in
    backticks, or, for a module of a folder, as `runs/launch.py`."""
    name = relative.rsplit("/", 1)[-1]
    spellings = [re.escape(f"`{name}`")]
    if "/" in relative:
        spellings.append(rf"(?<![\w.-]){re.escape(relative)}(?!\w)")
    return re.search("|".join(spellings), text) is not None


def unnamed_modules(repo: pathlib.Path) -> list[str]:
    """One line per module of the package under `repo` (`__init__.py` and `__main__.py` left out)
    that its folder's `__init__.py` docstring does not name (a module of a folder), or that
    docs/design.md does not name between `## 1.` and `## 2.` (every module)."""
    package = repo / PACKAGE.replace(".", "/")
    section = (repo / "docs" / "design.md").read_text().partition("\n## 1.")[2].partition("\n## 2.")[0]
    missing = []
    for path in sorted(package.rglob("*.py")):
        if path.name in ("__init__.py", "__main__.py"):
            continue
        relative = path.relative_to(package).as_posix()
        if path.parent != package:
            docstring = ast.get_docstring(ast.parse((path.parent / "__init__.py").read_text())) or ""
            if not _names_file(docstring, relative):
                missing.append(f"{relative} is not named in {path.parent.name}/__init__.py's docstring")
        if not _names_file(section, relative):
            missing.append(f"{relative} is not named in docs/design.md section 1")
    return missing


def test_every_module_is_named_in_its_folder_docstring_and_in_design_section_1():
    assert "\n## 1." in (REPO / "docs" / "design.md").read_text(), "docs/design.md has no section 1"
    assert unnamed_modules(REPO) == []


def test_the_module_list_check_sees_a_module_that_is_not_named(tmp_path):
    pkg = tmp_path / "tools" / "oracle_gate"
    (pkg / "runs").mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text("")
    (pkg / "runs" / "__init__.py").write_text('"""Running Bazel.\n\n- `launch.py`: how a run starts.\n"""\n')
    for name in ("cli.py", "files.py", "runs/launch.py", "runs/flags.py", "runs/blocks.py"):
        (pkg / name).write_text("")
    (tmp_path / "docs" / "design.md").write_text(
        "# Design\n\n## 1. Layout\n\n`cli.py`, runs/launch.py, `flags.py`, mruns/blocks.py\n\n"
        "## 2. Later\n\n`files.py`, `blocks.py`\n"
    )
    # flags.py is named in the section, not in its folder's docstring; blocks.py and files.py
    # only after section 1 (or as part of another path); __init__.py and __main__.py need no name.
    assert unnamed_modules(tmp_path) == [
        "files.py is not named in docs/design.md section 1",
        "runs/blocks.py is not named in runs/__init__.py's docstring",
        "runs/blocks.py is not named in docs/design.md section 1",
        "runs/flags.py is not named in runs/__init__.py's docstring",
    ]
