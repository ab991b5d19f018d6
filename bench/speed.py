"""Figures 8-13 of bench/run.py: the gate against what a team would run instead, measured in the
same run (docs/performance.md says what each measures).

  8 row runner, 1 suite     every row of the Bazel bench repository as one suite (the processes
                            Bazel would spawn: pin check, draw, caller, judge), no Bazel / the
                            pytest adapter (`adapter/test_oracle_rows.py`) on the same rows
  9 row runner, 100 suites  the same rows as one suite per oracle file / the same adapter
 10 warm check              `check` with warm Bazel, nothing changed since the last / a warm plain
                            `bazel test //oracles/... //harness/...` (each its own output user root)
 11 clean check             `check --clean` (workspace side warm) / a cold plain `bazel test`; and
                            `check --clean --base HEAD` on this checkout / a cold `bazel test` of it
 12 memory and speed        cold `check --results --verify-all` peak RSS with one 1 GiB blob / the
                            100 MiB target, beside the pin checker's (`adapter/check_pins.py`); and
                            its time at 10k invariants / the pin checker's
 13 growth                  cold `check` (fresh output user root) at 1,000 / at 250 invariants,
                            with 500 beside them
 14 sealed workspace run    warm `check --base HEAD` on this checkout, its workspace run in a sealed
                            root / the same with `--unsealed-workspace` (Bazel on the host)

Timed pairs run A/B interleaved and report medians.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

GATE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(GATE))
from tools.oracle_gate.actions.worker import decode_response, encode_request, read_message  # noqa: E402
from tools.testing.starlark import starlark_string  # noqa: E402

ACTIONS = GATE / "tools" / "oracle_gate" / "actions"
# The interpreter Bazel's actions use (tools/bazel/toolchains/BUILD.bazel), when it exists.
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
EMPTY_REFERENCE = '{"rows":{},"schema":1}\n'


# How Bazel starts the gate's own actions (tools/bazel/private/gate_action.bzl `gate_launcher`).
BOOTSTRAP = starlark_string(GATE / "tools" / "bazel" / "private" / "gate_action.bzl", "_BOOTSTRAP") % GATE
# What observe.py writes for an empty view (tools/bazel/private/oracle_test.bzl).
EMPTY_OBSERVATIONS = starlark_string(GATE / "tools" / "bazel" / "private" / "oracle_test.bzl", "_NO_OBSERVATIONS")
BARE_ENV = {"PATH": "/usr/bin:/bin"}


class Workers:
    """The gate's persistent workers, one per action module, started as Bazel starts them
    (`BOOTSTRAP MODULE --persistent_worker`) on first use, each then sent one request per action."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def request(self, module: str, arguments: Sequence[str]) -> None:
        """Runs one action of `module` on `arguments` in its worker.

        Raises:
            SystemExit: when the worker fails or the action exits non-zero.
        """
        proc = self.procs.get(module)
        if proc is None:
            proc = self.procs[module] = subprocess.Popen(
                [PYTHON, "-S", "-E", "-B", "-c", BOOTSTRAP, module, "--persistent_worker"],
                cwd=self.cwd,
                env=BARE_ENV,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(encode_request(arguments))
        proc.stdin.flush()
        message = read_message(proc.stdout)  # type: ignore[arg-type]
        if message is None:
            raise SystemExit(f"bench: the {module} worker ended (exit {proc.wait()})")
        code, output, _ = decode_response(message)
        if code:
            raise SystemExit(f"bench: {module} exited {code}: {output[-2000:]}")

    def close(self) -> None:
        """Ends every worker (its stdin closed) and waits for it."""
        for proc in self.procs.values():
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait()
        self.procs.clear()


def interleaved(runs: dict[str, Callable[[], float]], times: int) -> dict[str, float]:
    """Calls each of `runs` (name -> a function returning seconds) `times` times, alternating, and
    returns name -> median seconds."""
    seen: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(times):
        for name, run in runs.items():
            seen[name].append(run())
    return {name: statistics.median(values) for name, values in seen.items()}


def wall(cmd: Sequence[str], cwd: Path, env: dict[str, str] | None = None, ok: Sequence[int] = (0,)) -> float:
    """Wall seconds of `cmd`.

    Raises:
        SystemExit: when it exits with a code outside `ok`.
    """
    started = time.perf_counter()
    proc = subprocess.run(list(cmd), cwd=cwd, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if proc.returncode not in ok:
        raise SystemExit(f"bench: `{' '.join(cmd)}` exited {proc.returncode}: {(proc.stdout + proc.stderr)[-2000:]}")
    return seconds


def oracle_files(repo: Path) -> list[Path]:
    """The oracle files of a bench repository, in order."""
    return sorted(p for p in (repo / "oracles").glob("*.toml") if p.name != "policy.toml")


def _blob_paths(files: Sequence[Path]) -> list[str]:
    paths: list[str] = []
    for f in files:
        paths += [ln.split('"')[1] for ln in f.read_text().splitlines() if ln.startswith("blob = ")]
    return sorted(set(paths))


def suite_processes(repo: Path, files: Sequence[Path], work: Path, workers: Workers | None = None) -> float:
    """Runs one suite of `files` as Bazel's actions would, without Bazel: the pin check and the
    draw (requests to `workers`, or without it one `python3 -S -E -B -c` process each), the caller
    (`observe.py`, production code on PYTHONPATH) and the judge (`judge.py`), each a fresh process;
    returns wall seconds.

    Raises:
        SystemExit: when an action fails or a row does not pass.
    """
    work.mkdir(parents=True, exist_ok=True)
    v = {name: str(work / f"{name}.json") for name in ("index", "inputs", "exp", "hin", "hexp", "gen", "obs")}
    (work / "ref.json").write_text(EMPTY_REFERENCE)
    (work / "hobs.json").write_text(EMPTY_OBSERVATIONS)
    oracles = [f"--oracle=oracles/{f.name}={f}" for f in files]
    blobs = [f"--blob={p}={repo / p}" for p in _blob_paths(files)]
    started = time.perf_counter()
    for module, args in (
        (
            "pin_check",
            [
                "--out",
                v["index"],
                "--inputs",
                v["inputs"],
                "--expectations",
                v["exp"],
                "--hidden-inputs",
                v["hin"],
                "--hidden-expectations",
                v["hexp"],
                f"--policy=oracles/policy.toml={repo / 'oracles' / 'policy.toml'}",
                *oracles,
                *blobs,
            ],
        ),
        ("draw", ["--index", v["index"], "--salt", "", "--out", v["gen"], *oracles]),
    ):
        if workers is not None:
            workers.request(module, args)
        else:
            wall([PYTHON, "-S", "-E", "-B", "-c", BOOTSTRAP, module, *args], work, BARE_ENV)
    wall(
        [
            PYTHON,
            str(ACTIONS / "observe.py"),
            "--inputs",
            v["inputs"],
            "--generated",
            v["gen"],
            "--out",
            v["obs"],
            "--log",
            str(work / "log"),
        ],
        work,
        {**BARE_ENV, "PYTHONPATH": str(repo)},
    )
    wall(
        [
            PYTHON,
            str(ACTIONS / "judge.py"),
            "--expectations",
            v["exp"],
            "--observations",
            v["obs"],
            "--log",
            str(work / "log"),
            "--reference",
            str(work / "ref.json"),
            "--generated",
            v["gen"],
            "--hidden-expectations",
            v["hexp"],
            "--hidden-observations",
            str(work / "hobs.json"),
        ],
        work,
        {**BARE_ENV, "PYTHONPATH": str(GATE)},
    )
    return time.perf_counter() - started


def with_workers(work: Path, run: Callable[[Workers], float]) -> float:
    """Wall seconds of `run(workers)`, the workers' start and end included."""
    started = time.perf_counter()
    workers = Workers(work)
    try:
        run(workers)
    finally:
        workers.close()
    return time.perf_counter() - started


def adapter_seconds(repo: Path) -> float | None:
    """Wall seconds of the pytest adapter on every row of `repo`, or None without pytest."""
    if subprocess.run([sys.executable, "-c", "import pytest"], capture_output=True, check=False).returncode != 0:
        return None
    return wall([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "adapter"], repo)


def row_runner_figures(repo: Path, work: Path, times: int) -> tuple[dict[str, float], int]:
    """Figures 8 and 9: ({"one suite", "per file", "per file, no workers", "adapter"} -> median
    seconds, oracle files). "no workers" starts a process per pin check and draw, as Bazel does
    under any strategy but the worker one."""
    files = oracle_files(repo)
    scratch = Path(tempfile.mkdtemp(prefix="rows-", dir=work))
    adapter = adapter_seconds(repo)
    runs: dict[str, Callable[[], float]] = {
        "one suite": lambda: with_workers(scratch, lambda w: suite_processes(repo, files, scratch / "all", w)),
        "per file": lambda: with_workers(
            scratch, lambda w: sum(suite_processes(repo, [f], scratch / f.stem, w) for f in files)
        ),
        "per file, no workers": lambda: sum(suite_processes(repo, [f], scratch / f.stem) for f in files),
    }
    if adapter is not None:
        runs["adapter"] = lambda: adapter_seconds(repo) or 0.0
    try:
        return interleaved(runs, times), len(files)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def gate_cmd(repo: Path, *args: str) -> list[str]:
    """`python3 -m tools.oracle_gate --repo REPO check ARGS` from this checkout."""
    return gate_command(repo, "check", *args)


def gate_command(repo: Path, command: str, *args: str) -> list[str]:
    """`python3 -m tools.oracle_gate --repo REPO COMMAND ARGS` from this checkout."""
    return [sys.executable, "-B", "-m", "tools.oracle_gate", "--repo", str(repo), command, *args]


def plain_test(repo: Path, env: dict[str, str], patterns: Sequence[str] = ("//oracles/...", "//harness/...")) -> float:
    """Wall seconds of a plain `bazel test` of `patterns` in `repo` with `env`."""
    return wall(["bazel", "test", "--symlink_prefix=/", *patterns], repo, env)


def fresh_home(path: Path) -> Path:
    """`path`, emptied: a home whose output user root and gate run folder start empty."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def shutdown(repo: Path, env: dict[str, str]) -> None:
    """Stops the Bazel server of `repo` under `env`'s home, and waits for it, and ends the kept
    roots of the sealed workspace runs there (`oracle-gate stop`)."""
    subprocess.run(["bazel", "shutdown"], cwd=repo, env=env, capture_output=True, check=False)
    subprocess.run(
        [sys.executable, "-B", "-m", "tools.oracle_gate", "stop"], cwd=GATE, env=env, capture_output=True, check=False
    )


def warm_figure(repo: Path, env_for: Callable[[Path], dict[str, str]], work: Path, times: int) -> dict[str, float]:
    """Figure 10: warm `check --base main` / warm plain `bazel test`, each in an output user root
    of its own, both warmed first. Returns {"check", "bazel test"} -> median seconds."""
    gate_env, plain_env = env_for(fresh_home(work / "warm-check")), env_for(fresh_home(work / "warm-plain"))
    try:
        wall(gate_cmd(repo, "--base", "main"), GATE, gate_env)
        plain_test(repo, plain_env)
        return interleaved(
            {
                "check": lambda: wall(gate_cmd(repo, "--base", "main"), GATE, gate_env),
                "bazel test": lambda: plain_test(repo, plain_env),
            },
            times,
        )
    finally:
        shutdown(repo, gate_env)
        shutdown(repo, plain_env)


def seal_figure(repo: Path, env_for: Callable[[Path], dict[str, str]], work: Path, times: int) -> dict[str, float]:
    """Figure 14: warm `check --base HEAD` of `repo` with its workspace run sealed (the default) /
    the same with `--unsealed-workspace` (Bazel's server on the host and kept between checks, as
    before the seal; the sealed run keeps its root and server between checks too: kept_root.py),
    each with a home of its own, both warmed first. Returns {"sealed", "unsealed"} -> median seconds."""
    sealed_env, unsealed_env = env_for(fresh_home(work / "seal-sealed")), env_for(fresh_home(work / "seal-unsealed"))
    sealed = gate_cmd(repo, "--base", "HEAD")
    unsealed = gate_cmd(repo, "--base", "HEAD", "--unsealed-workspace")
    try:
        wall(sealed, GATE, sealed_env)
        wall(unsealed, GATE, unsealed_env)
        return interleaved(
            {"sealed": lambda: wall(sealed, GATE, sealed_env), "unsealed": lambda: wall(unsealed, GATE, unsealed_env)},
            times,
        )
    finally:
        shutdown(repo, sealed_env)
        shutdown(repo, unsealed_env)


def clean_figure(
    repo: Path,
    env_for: Callable[[Path], dict[str, str]],
    work: Path,
    times: int,
    base: str = "main",
    patterns: Sequence[str] = ("//oracles/...", "//harness/..."),
) -> dict[str, float]:
    """Figure 11: `check --clean --base BASE` with the workspace side warm / a cold plain
    `bazel test` (a fresh output user root each time). Returns {"check --clean", "cold bazel test"}
    -> median seconds."""
    gate_env = env_for(fresh_home(work / "clean-check"))

    def cold() -> float:
        env = env_for(fresh_home(work / "clean-plain"))
        try:
            return plain_test(repo, env, patterns)
        finally:
            shutdown(repo, env)

    try:
        wall(gate_cmd(repo, "--base", base), GATE, gate_env)
        return interleaved(
            {
                "check --clean": lambda: wall(gate_cmd(repo, "--base", base, "--clean"), GATE, gate_env),
                "cold bazel test": cold,
            },
            times,
        )
    finally:
        shutdown(repo, gate_env)


def growth_figure(repos: dict[int, Path], env_for: Callable[[Path], dict[str, str]], work: Path) -> dict[int, float]:
    """Figure 13: invariants -> wall seconds of a cold `check --base main` (fresh output user root)."""
    out = {}
    for count, repo in sorted(repos.items()):
        env = env_for(fresh_home(work / f"growth-{count}"))
        try:
            out[count] = wall(gate_cmd(repo, "--base", "main"), GATE, env)
        finally:
            shutdown(repo, env)
    return out


def pin_checker(repo: Path, timed: Callable[[list[str], Path], tuple[float, int, int]]) -> tuple[float, int]:
    """(seconds, peak RSS bytes) of the pin checker `adapter/check_pins.py` on `repo`."""
    seconds, code, rss = timed([sys.executable, "-B", str(repo / "adapter" / "check_pins.py")], repo)
    if code != 0:
        raise SystemExit(f"bench: the pin checker failed on {repo}")
    return seconds, rss


def this_checkout_is_clean() -> bool:
    """True when this checkout has no uncommitted change (`check` refuses a dirty work tree)."""
    out = subprocess.run(
        ["git", "-C", str(GATE), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        check=False,
    )
    return out.returncode == 0 and not out.stdout.strip()


# Figure 15's change: `billing.tax.apply_rate` refactored, every result kept (the behaviour diff
# compares it on both sides and finds no difference).
REFACTOR_OLD = "    product = _CONTEXT.multiply(Decimal(cents), parse_rate(rate))\n"
REFACTOR_NEW = "    factor = parse_rate(rate)\n    product = _CONTEXT.multiply(Decimal(cents), factor)\n"
# The plain loop of figure 15: both sides' `apply_rate` (their files given as argv[1] and argv[2]),
# each called on the same argv[3] generated inputs in one interpreter.
PLAIN_LOOP = """
import importlib.util, random, sys, time
sys.path.insert(0, sys.argv[4])
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.apply_rate
sides = [load(sys.argv[1], "billing.tax_base"), load(sys.argv[2], "billing.tax_judged")]
rng = random.Random(15)
inputs = [(rng.randrange(0, 10**9), rng.choice(["0.5", "0.01", "0.0825", "0.125"])) for _ in range(int(sys.argv[3]))]
results = [[f(a, r) for a, r in inputs] for f in sides]
assert results[0] == results[1]
"""


def refactor_copy(work: Path) -> Path:
    """A committed copy of this checkout's tracked files in `work/behaviour/ws` (made anew): branch
    `main`, and `refactor` checked out on top of it with `apply_rate` refactored (REFACTOR_NEW).

    Raises:
        SystemExit: when git fails or this checkout's `billing/tax.py` lacks REFACTOR_OLD.
    """
    ws = work / "behaviour" / "ws"
    shutil.rmtree(ws.parent, ignore_errors=True)
    ws.mkdir(parents=True)
    listed = subprocess.run(["git", "-C", str(GATE), "ls-files", "-z"], capture_output=True, check=True).stdout
    for rel in filter(None, listed.split(b"\0")):
        src, dest = GATE / os.fsdecode(rel), ws / os.fsdecode(rel)
        if src.exists() or src.is_symlink():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest, follow_symlinks=False)
    tax = ws / "billing" / "tax.py"
    text = tax.read_text()
    if REFACTOR_OLD not in text:
        raise SystemExit("bench: figure 15: billing/tax.py has no line to refactor")
    ident = ["-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "commit.gpgsign=false"]
    for args in (
        ["-c", "init.defaultBranch=main", "init", "-q"],
        ["add", "-A"],
        [*ident, "commit", "-q", "-m", "base"],
        ["checkout", "-q", "-b", "refactor"],
    ):
        subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True)
    tax.write_text(text.replace(REFACTOR_OLD, REFACTOR_NEW))
    subprocess.run(["git", "-C", str(ws), *ident, "commit", "-q", "-am", "refactor"], check=True, capture_output=True)
    return ws


def phase_seconds(repo: Path, env: dict[str, str]) -> tuple[float, int]:
    """(seconds of the behaviour phase, inputs it compared at most) of a `check --base main` of
    `repo`, read from the report's `time:` line and its `behaviour diff` line.

    Raises:
        SystemExit: when the check does not pass or the report has no behaviour phase.
    """
    proc = subprocess.run(gate_cmd(repo, "--base", "main"), cwd=GATE, env=env, capture_output=True, text=True)
    found = re.search(r"behaviour phase ([0-9.]+) s", proc.stdout)
    diff = re.search(r"behaviour diff +(\d+) function\(s\) compared on up to (\d+) inputs", proc.stdout)
    if proc.returncode != 0 or found is None or diff is None:
        raise SystemExit(f"bench: figure 15: check exited {proc.returncode}: {(proc.stdout + proc.stderr)[-2000:]}")
    return float(found.group(1)), int(diff.group(1)) * int(diff.group(2))


def behaviour_figure(
    work: Path, env_for: Callable[[Path], dict[str, str]], times: int
) -> tuple[dict[str, float], int, Path]:
    """Figure 15: the behaviour phase of a warm `check --base main` of a one-function refactor
    (`refactor_copy`) / a plain loop calling both sides' function on as many generated inputs in one
    interpreter (PLAIN_LOOP), each warmed first, interleaved. Returns ({"behaviour phase", "plain
    loop"} -> median seconds, the inputs compared, the copy)."""
    repo = refactor_copy(work)
    env = env_for(fresh_home(work / "behaviour" / "home"))
    sides = work / "behaviour" / "sides"
    sides.mkdir()
    for name, rev in (("base.py", "main"), ("judged.py", "refactor")):
        shown = subprocess.run(
            ["git", "-C", str(repo), "show", f"{rev}:billing/tax.py"], capture_output=True, check=True
        ).stdout
        (sides / name).write_bytes(shown)
    try:
        _, inputs = phase_seconds(repo, env)
        loop = [
            sys.executable,
            "-B",
            "-c",
            PLAIN_LOOP,
            str(sides / "base.py"),
            str(sides / "judged.py"),
            str(inputs),
            str(repo),
        ]
        return (
            interleaved(
                {"behaviour phase": lambda: phase_seconds(repo, env)[0], "plain loop": lambda: wall(loop, repo)},
                times,
            ),
            inputs,
            repo,
        )
    finally:
        shutdown(repo, env)
