"""Public entry point for the oracle rules: `oracle_suite`, `oracle_test` and `oracle_suites`.

An oracle suite is a set of human-owned oracle files (schema 1, docs/design.md section 2) with the
JSON blobs their rows pin; `oracle_suite` checks every pin at build time and splits the rows into
an inputs view and a expectations view. `oracle_test` is the protected row runner: it calls
each row's entry in an action that sees only the inputs view and judges the results in a test that
never loads production code (docs/design.md sections 8-10).

Usage, in the protected `oracles/BUILD.bazel`:

```starlark
load("//tools/bazel:oracle.bzl", "oracle_suite", "oracle_test")

oracle_suite(
    name = "oracles",
    srcs = glob(["*.toml"], exclude = ["policy.toml"]),
    blobs = glob(["blobs/**"]),
    policy = "policy.toml",
)

oracle_test(
    name = "oracle_test",
    suite = ":oracles",
    deps = ["//billing"],  # the production py_library targets the rows' entries live in
)
```

Only the testcases of `oracle_test` targets in the `oracles` package count as invariant outcomes.

With many oracle files, `oracle_suites` declares one suite and one test per file, so that a
changed blob re-runs only its own file's pin check, draw, caller and judge:

```starlark
load("//tools/bazel:oracle.bzl", "oracle_suites")

oracle_suites(
    name = "oracle_tests",  # a test_suite of every file's `<stem>_test`
    srcs = glob(["*.toml"], exclude = ["policy.toml"]),
    blobs = glob(["blobs/**"]),  # blobs/<stem>/** belong to <stem>.toml alone; the rest are shared
    policy = "policy.toml",
    deps = ["//billing"],
)
```
"""

load("//tools/bazel/private:oracle_suite.bzl", _OracleSuiteInfo = "OracleSuiteInfo", _oracle_suite = "oracle_suite")
load("//tools/bazel/private:oracle_suites.bzl", _oracle_suites = "oracle_suites")
load("//tools/bazel/private:oracle_test.bzl", _oracle_test = "oracle_test")

OracleSuiteInfo = _OracleSuiteInfo
oracle_suite = _oracle_suite
oracle_test = _oracle_test
oracle_suites = _oracle_suites
