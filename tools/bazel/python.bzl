"""The single place this workspace's BUILD files get their Python rules from.

They forward to rules_python where it is present (Bazel 7, WORKSPACE or bzlmod) and to Bazel's
native rules on Bazel 4.2, which has no rules_python offline: `@oracle_gate_python_rules`, declared
by `//tools/bazel:workspace.bzl` (WORKSPACE) or `//tools/bazel:extensions.bzl` (MODULE.bazel),
holds the choice. `RULES` says which is in use ("rules_python" or "native").

Usage, in any BUILD file:

```starlark
load("//tools/bazel:python.bzl", "py_library", "py_test")

py_library(
    name = "billing",
    srcs = glob(["*.py"]),
    visibility = ["//visibility:public"],
)
```
"""

load(
    "@oracle_gate_python_rules//:defs.bzl",
    _RULES = "RULES",
    _py_binary = "py_binary",
    _py_library = "py_library",
    _py_test = "py_test",
)

RULES = _RULES

def py_binary(**kwargs):
    """Declares a Python executable; see rules_python's (or Bazel's native) `py_binary`."""
    _py_binary(**kwargs)

def py_library(**kwargs):
    """Declares a Python library; see rules_python's (or Bazel's native) `py_library`."""
    _py_library(**kwargs)

def py_test(**kwargs):
    """Declares a Python test; see rules_python's (or Bazel's native) `py_test`."""
    _py_test(**kwargs)
