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

load("//tools/bazel:python.bzl", "py_library", "py_test")
load("@pypi//:requirements.bzl", "requirement")

def pytest_test(name, src, deps = [], data = [], args = [], tags = [], size = "small", shard_count = None):
    """Declares a py_test named `name` that runs the pytest module `src`.

    Args:
      name: the target name.
      src: the pytest module (a file in this package).
      deps: py_library targets the module imports; the pinned pytest is always added.
      data: runfiles the module reads.
      args: extra pytest arguments.
      tags: test tags (e.g. "integration", "local", "external").
      size: the test size.
      shard_count: run the module's tests in this many shards side by side (pytest_main.py gives
        each shard its share); None for one.
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
        shard_count = shard_count,
        tags = tags,
        deps = deps + [requirement("pytest")],
    )

def pytest_folder(deps = [], data = [], tags = [], size = "small", tests = {}):
    """Declares the tests of a folder: `conftest` (its `__init__.py` and `conftest.py`) and one
    `pytest_test` per `test_*.py`, named like the file.

    Usage, in the folder's BUILD file:

    ```starlark
    load("//tools/bazel:pytest.bzl", "pytest_folder")

    pytest_folder(
        deps = ["//tools/oracle_gate", "//tools/testing:support"],
        tests = {"test_remote.py": {"size": "enormous", "tags": ["reapi"]}},
    )
    ```

    Args:
      deps: py_library targets the tests and the conftest import.
      data: runfiles every test reads.
      tags: tags of every test.
      size: the size of every test not named in `tests`.
      tests: per-file settings, added to (`deps`, `data`, `tags`, `args`) or replacing (`size`) the
        above, and `shard_count` (see `pytest_test`).
    """
    py_library(
        name = "conftest",
        testonly = True,
        srcs = [
            "__init__.py",
            "conftest.py",
        ],
        deps = deps,
    )
    for src in native.glob(["test_*.py"]):
        extra = tests.get(src, {})
        pytest_test(
            name = src[:-len(".py")],
            src = src,
            args = extra.get("args", []),
            data = data + extra.get("data", []),
            deps = [":conftest"] + deps + extra.get("deps", []),
            size = extra.get("size", size),
            tags = tags + extra.get("tags", []),
            shard_count = extra.get("shard_count"),
        )
