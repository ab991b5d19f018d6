"""Public entry point for the locked third-party Python repository rule, `pip_lock_repository`.

It installs a pip-compile lock (`--generate-hashes`) with `pip install --require-hashes
--only-binary=:all:` into an external repository with one target per pinned distribution, and
refuses a lock that holds anything but pins and hashes (docs/dependencies.md). Bazel 4.2.3 has no
rules_python offline on Debian 12, so this rule stands in for rules_python's `pip_parse`, reading
the same lock format.

Usage, in `WORKSPACE`:

```starlark
load("//tools/bazel:pip.bzl", "pip_lock_repository")

pip_lock_repository(
    name = "pypi",
    lock = "//:requirements_lock.txt",
)
```

and in a BUILD file:

```starlark
load("@pypi//:requirements.bzl", "requirement")

py_test(..., deps = [requirement("hypothesis")])
```

On Bazel 7 `//tools/bazel:workspace.bzl` declares `@pypi` with rules_python's `pip_parse` instead;
its `requirements.bzl` has the same `requirement()`.
"""

load("//tools/bazel/private:pip_lock_repository.bzl", _pip_lock_repository = "pip_lock_repository")

pip_lock_repository = _pip_lock_repository
