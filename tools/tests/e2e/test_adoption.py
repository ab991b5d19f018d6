"""A team adopts the gate on the Bazel on PATH (4.2.3, WORKSPACE mode, under `bazel test`): the steps
of tools/testing/adoption.py, from a repository holding only a production package to `check` and
`check --clean` passing and a broken function, a broken BUILD file, an unlabelled oracle edit and a
base that cannot fetch an external repository each getting their exit code. CI runs the same steps
on Bazel 7.7.1 in WORKSPACE mode, with bzlmod, and with bzlmod and Bazel 9's flags (.ci/run). It
needs a nested Bazel because adoption is the gate's whole path on a new repository: `init`'s
workspace files are only proven by Bazel building them, and every `check` runs the gate's Bazel
runs."""

from __future__ import annotations

import subprocess
import sys

from tools.testing.workspace_copy import nested_env, source_root


def test_adoption_in_workspace_mode_from_a_bare_repository():
    proc = subprocess.run(
        [sys.executable, "-B", str(source_root() / "tools/testing/adoption.py"), "--mode", "workspace"],
        cwd=source_root(),
        env=nested_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=1500,
    )
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "adoption (workspace): passed in" in proc.stdout
