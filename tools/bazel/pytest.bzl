"""`pytest_test`: a py_test that runs one pytest module with the pinned pytest.

The module runs under `//tools/testing:pytest_main.py`, which disables plugin autoload and writes
JUnit XML to `$XML_OUTPUT_FILE`.

Usage, in a BUILD file:

```starlark
load("//tools/bazel:pytest.bzl", "pytest_test")

pytest_test(
    name = "test_results",
    src = "test_results.py",
    deps = ["//tools/oracle_gate"],
)
```
"""

load("//tools/bazel:python.bzl", "py_test")

def pytest_test(name, src, deps = [], data = [], args = [], tags = [], size = "small"):
    """Declares a py_test named `name` that runs the pytest module `src`.

    Args:
      name: the target name.
      src: the pytest module (a file in this package).
      deps: py_library targets the module imports; the pinned pytest is always added.
      data: runfiles the module reads.
      args: extra pytest arguments.
      tags: test tags (e.g. "integration", "local", "external").
      size: the test size.
    """
    py_test(
        name = name,
        size = size,
        srcs = [
            src,
            "//tools/testing:pytest_main.py",
        ],
        args = ["$(rootpath %s)" % src] + args,
        data = data,
        main = "//tools/testing:pytest_main.py",
        tags = tags,
        deps = deps + ["@pypi//:pytest"],
    )
