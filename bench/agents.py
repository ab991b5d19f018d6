"""Figure 18 of bench/run.py: the agent's local check against what an agent would run instead,
measured in the same run (docs/performance.md says what it measures).

 18 quick check   warm `check --quick` with an uncommitted bug in `billing/tax.py` (a row reached:
                  the oracle test runs on the work tree, exit 4) on a committed copy of this
                  checkout / a warm plain `bazel test //oracles/...` of the same tree; beside it,
                  warm `check --quick` of a harness-only change from `main` (no row reached:
                  nothing runs)

Timed pairs run A/B interleaved and report medians.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from bench import speed

# The uncommitted bug: `apply_rate` rounds half up, which `tax_round_half_even` refuses.
BUG_OLD, BUG_NEW = "rounding=ROUND_HALF_EVEN,", "rounding=ROUND_HALF_UP,"
IMPORT_OLD, IMPORT_NEW = "from decimal import ROUND_HALF_EVEN,", "from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP,"


def quick_figure(work: Path, env_for: Callable[[Path], dict[str, str]], times: int) -> dict[str, float]:
    """Figure 18 on a committed copy of this checkout (`speed.refactor_copy`, branch `refactor`):
    the work tree's `billing/tax.py` broken (uncommitted), then warm `check --quick` (exit 4) /
    warm plain `bazel test //oracles/...` (exit 3: a test fails), each with a home of its own and
    warmed once, interleaved `times` times; then the bug undone and a harness-only change committed
    on a branch from `main` checked warm. Returns {"quick", "bazel test", "quick, no row reached"} -> median seconds.

    Raises:
        SystemExit: when a command exits with another code, or `billing/tax.py` lacks the line.
    """
    repo = speed.refactor_copy(work)
    tax = repo / "billing" / "tax.py"
    original = tax.read_text()
    if BUG_OLD not in original or IMPORT_OLD not in original:
        raise SystemExit("bench: figure 18: billing/tax.py has no line to break")
    tax.write_text(original.replace(BUG_OLD, BUG_NEW).replace(IMPORT_OLD, IMPORT_NEW))
    gate_env, plain_env = (
        env_for(speed.fresh_home(work / "quick-check")),
        env_for(speed.fresh_home(work / "quick-plain")),
    )
    quick = speed.gate_cmd(repo, "--quick", "--format", "json")
    try:
        speed.wall(quick, speed.GATE, gate_env, ok=(4,))
        speed.wall(["bazel", "test", "--symlink_prefix=/", "//oracles/..."], repo, plain_env, ok=(3,))
        seconds = speed.interleaved(
            {
                "quick": lambda: speed.wall(quick, speed.GATE, gate_env, ok=(4,)),
                "bazel test": lambda: speed.wall(
                    ["bazel", "test", "--symlink_prefix=/", "//oracles/..."], repo, plain_env, ok=(3,)
                ),
            },
            times,
        )
        tax.write_text(original)
        _git(repo, "checkout", "-q", "-b", "harness-only", "main")
        examples = repo / "harness" / "examples_test.py"
        examples.write_text(examples.read_text() + "\n# another example to come\n")
        _git(repo, "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qam", "harness only")
        seconds["quick, no row reached"] = speed.interleaved(
            {"quick": lambda: speed.wall(quick, speed.GATE, gate_env)}, times
        )["quick"]
        return seconds
    finally:
        speed.shutdown(repo, gate_env)
        speed.shutdown(repo, plain_env)


def _git(repo: Path, *args: str) -> None:
    """Runs git in `repo`.

    Raises:
        CalledProcessError: when it fails.
    """
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
