"""Unit tests of runs/procfs.py: what /proc says about this process and its children."""

from __future__ import annotations

import os
import subprocess
import sys

from tools.oracle_gate.runs import procfs


def test_stat_and_processes_know_this_process_and_its_parent():
    parent, state, started = procfs.stat(os.getpid())
    assert parent == os.getppid() and state in "RS" and started > 0
    assert procfs.processes()[os.getpid()][0] == os.getppid()
    assert procfs.stat(2**22 + 1) is None  # above pid_max: never a process


def test_a_child_shares_this_namespace_and_an_ended_one_is_gone():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert procfs.child_namespace(os.getpid()) == procfs.namespace(os.getpid()) is not None
    finally:
        child.kill()
        child.wait()
    assert procfs.namespace(child.pid) is None


def test_wait_empty_is_true_for_a_namespace_without_processes_and_false_on_timeout():
    assert procfs.wait_empty("pid:[1]", 1.0)  # no namespace has that inode
    assert not procfs.wait_empty(procfs.namespace(os.getpid()), 0.0)  # this one holds this process
