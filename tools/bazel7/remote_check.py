"""The gate's remote clean run on Bazel 7.7.1: `check --clean --remote` of this checkout, inside the
Debian sid root, against the loopback REAPI engine (tools/engine/engine.py) started here.

    python3 tools/bazel7/remote_check.py --mode bzlmod|workspace [--base REV]

The engine (PostgreSQL, BuildGrid, the locked-down worker) runs on this machine, outside the root;
the gate and its Bazel 7.7.1 run in the root (tools/bazel7/bazel7.sh --run) with
ORACLE_GATE_BAZEL_CONFIG=bazel7-<mode> and ORACLE_GATE_REMOTE_EXECUTOR naming the engine. Prints the
gate's report and exits with the gate's exit code (1 when the engine cannot start). The engine's
files live in a fresh folder under `~/.cache/oracle-gate`, removed at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tools.engine.engine import execution_engine  # noqa: E402 - after the path above


def main(argv: list[str]) -> int:
    """Starts the engine, runs the gate in the sid root, returns the gate's exit code."""
    parser = argparse.ArgumentParser(prog="remote_check.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("bzlmod", "workspace"), required=True, help="the Bazel 7.7.1 mode")
    parser.add_argument("--base", default="HEAD", help="the base revision for `check` (default: HEAD)")
    args = parser.parse_args(argv)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "oracle-gate"
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="remote7-", dir=cache))
    try:
        with execution_engine(work) as target:
            env = dict(os.environ, ORACLE_GATE_BAZEL_CONFIG=f"bazel7-{args.mode}", ORACLE_GATE_REMOTE_EXECUTOR=target)
            cmd = [
                str(ROOT / "tools/bazel7/bazel7.sh"),
                "--run",
                "python3",
                "-B",
                "-m",
                "tools.oracle_gate",
                "check",
                "--clean",
                "--remote",
                "--base",
                args.base,
            ]
            return subprocess.run(cmd, cwd=ROOT, env=env, check=False).returncode
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        print(f"remote_check: the loopback engine did not start: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
