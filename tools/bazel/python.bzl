"""The single place this workspace's BUILD files get their Python rules from.

Today these forward to Bazel 4.2's native rules. Moving to rules_python is one edit: load its
`py_binary`, `py_library` and `py_test` here and forward to those instead.

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

def py_binary(**kwargs):
    """Declares a Python executable; see Bazel's `py_binary`."""
    native.py_binary(**kwargs)

def py_library(**kwargs):
    """Declares a Python library; see Bazel's `py_library`."""
    native.py_library(**kwargs)

def py_test(**kwargs):
    """Declares a Python test; see Bazel's `py_test`."""
    native.py_test(**kwargs)
