"""Implementation of `oracle_suites`: one `oracle_suite` and one `oracle_test` per oracle file.

With one suite for every file, a changed blob invalidates every file's pin check, draw, caller and
judge. Split per file, Bazel re-runs only the suite and the test of the file whose blob changed:
the blobs under `<blob_dir>/<stem>/` are inputs of `<stem>.toml`'s suite only; any other blob is
shared and an input of every suite (docs/oracles.md, "Many oracle files").
"""

load(":oracle_suite.bzl", "oracle_suite")
load(":oracle_test.bzl", "oracle_test")

def _stem(src):
    if not src.endswith(".toml") or "/" in src:
        fail("oracle_suites: %r is not an oracle file of this package (NAME.toml)" % src)
    return src[:-len(".toml")]

def oracle_suites(name, srcs, blobs, deps, policy = None, references = [], blob_dir = "blobs", size = "small", tags = [], visibility = None):
    """Declares `<stem>_suite` and `<stem>_test` for each oracle file `<stem>.toml`, and the test
    suite `name` of all those tests (tagged `manual`: `bazel test :NAME` runs them all).

    Args:
      name: the `test_suite` of every oracle test.
      srcs: the oracle files, `NAME.toml` in this package (e.g. `glob(["*.toml"], exclude = ["policy.toml"])`).
      blobs: every blob the rows reference (e.g. `glob(["blobs/**"])`).
      deps: the production `py_library` targets the rows' entries live in.
      policy: the policy file, checked with every suite.
      references: the reference implementations' `py_library` targets (under `oracles/reference/`),
        given to every suite (`oracle_suite`'s `references`).
      blob_dir: the folder whose `<stem>/` subfolders hold each file's own blobs.
      size: the size of each judge test.
      tags: tags of each judge test.
      visibility: visibility of the suites and tests.
    """
    stems = [_stem(src) for src in srcs]
    own = {stem: [] for stem in stems}
    shared = []
    for blob in blobs:
        parts = blob.split("/")
        owner = parts[len(blob_dir.split("/"))] if blob.startswith(blob_dir + "/") and len(parts) > len(blob_dir.split("/")) + 1 else None
        if owner in own:
            own[owner].append(blob)
        else:
            shared.append(blob)
    tests = []
    for src, stem in zip(srcs, stems):
        oracle_suite(
            name = stem + "_suite",
            srcs = [src],
            blobs = own[stem] + shared,
            policy = policy,
            references = references,
            visibility = visibility,
        )
        oracle_test(
            name = stem + "_test",
            suite = ":" + stem + "_suite",
            deps = deps,
            size = size,
            tags = tags,
            visibility = visibility,
        )
        tests.append(":" + stem + "_test")
    # `manual`: a wildcard such as the gate's `bazel build //oracles/...` of the views must not
    # expand the suite into its tests (the tests themselves are found by the wildcard anyway).
    native.test_suite(name = name, tests = tests, tags = ["manual"], visibility = visibility)
