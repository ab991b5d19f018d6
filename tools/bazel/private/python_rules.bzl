"""Repository rule `python_rules_repository`: the Python rules and the pip lock rule this workspace
uses, chosen once per Bazel version.

Bazel 4.2 has native `py_*` rules and no rules_python offline on Debian 12; from Bazel 7 on the
rules come from rules_python (WORKSPACE is off by default in Bazel 8, and the native rules are
going away). A `load()` cannot be conditional, so this rule writes a small repository whose
`defs.bzl` forwards to one or the other; `//tools/bazel:python.bzl` loads from it, so BUILD files
never change between versions. Its `workspace.bzl` declares the third-party repository of
`requirements_lock.txt` the same way: rules_python's `pip_parse` when rules_python is used, else
`pip_lock_repository`. Both repositories give `@<name>//:requirements.bzl` with `requirement()`.
"""

_NATIVE_DEFS = '''\
"""Python rules: Bazel's native rules (written by python_rules_repository)."""

RULES = "native"

def py_binary(**kwargs):
    """Bazel's native py_binary, with the same arguments."""
    native.py_binary(**kwargs)

def py_library(**kwargs):
    """Bazel's native py_library, with the same arguments."""
    native.py_library(**kwargs)

def py_test(**kwargs):
    """Bazel's native py_test, with the same arguments."""
    native.py_test(**kwargs)
'''

_RULES_PYTHON_DEFS = '''\
"""Python rules: rules_python's (written by python_rules_repository)."""

load("@rules_python//python:defs.bzl", _py_binary = "py_binary", _py_library = "py_library", _py_test = "py_test")

RULES = "rules_python"

py_binary = _py_binary
py_library = _py_library
py_test = _py_test
'''

_NATIVE_WORKSPACE = '''\
"""Third-party Python repository: pip_lock_repository (written by python_rules_repository)."""

load("@{gate}//tools/bazel/private:pip_lock_repository.bzl", "pip_lock_repository")

def python_dependencies(name, lock):
    """Declares @<name> from the pip-compile lock `lock` (a label) with pip_lock_repository."""
    pip_lock_repository(name = name, lock = lock)
'''

_RULES_PYTHON_WORKSPACE = '''\
"""Third-party Python repository: rules_python's pip_parse (written by python_rules_repository)."""

load("@rules_python//python:pip.bzl", "pip_parse")
load("@rules_python//python:repositories.bzl", "py_repositories")
load("@{gate}//tools/bazel/private:pip_lock_repository.bzl", "checked_lock_repository")

def python_dependencies(name, lock):
    """Declares @<name> from the pip-compile lock `lock` (a label) with rules_python's pip_parse;
    WORKSPACE then loads `install_deps` from `@<name>//:requirements.bzl` and calls it."""
    py_repositories()
    # pip_parse passes pip options it finds in the lock on to pip: it reads a copy made only when
    # the lock holds pins and hashes alone.
    checked_lock_repository(name = name + "_lock", lock = lock)
    pip_parse(
        name = name,
        requirements_lock = "@%s_lock//:requirements_lock.txt" % name,
        # The interpreter on PATH, not a downloaded one: the build stays offline.
        python_interpreter = "python3",
        # Wheels only, as pip_lock_repository: no source distribution is built (and run) here.
        extra_pip_args = ["--only-binary=:all:"],
    )
'''

def _python_rules_repository_impl(rctx):
    rules_python = rctx.attr.rules_python
    rctx.file("BUILD.bazel", "exports_files(glob([\"*.bzl\"]))\n")
    rctx.file("WORKSPACE", "workspace(name = \"{}\")\n".format(rctx.name))
    rctx.file("defs.bzl", _RULES_PYTHON_DEFS if rules_python else _NATIVE_DEFS)
    workspace = _RULES_PYTHON_WORKSPACE if rules_python else _NATIVE_WORKSPACE
    rctx.file("workspace.bzl", workspace.format(gate = rctx.attr.gate_repository))

python_rules_repository = repository_rule(
    implementation = _python_rules_repository_impl,
    attrs = {
        "gate_repository": attr.string(
            default = "",
            doc = "The name oracle-gate's own repository has where this rule is used (`@NAME`); " +
                  "empty for the main repository.",
        ),
        "rules_python": attr.bool(
            mandatory = True,
            doc = "True: forward to rules_python. False: Bazel's native rules and pip_lock_repository.",
        ),
    },
    doc = "Writes `defs.bzl` (py_binary, py_library, py_test, RULES) and `workspace.bzl` " +
          "(python_dependencies(name, lock)) for the Python rules in use.",
)

def has_bzlmod():
    """True on a Bazel with bzlmod (6.0 and later): `native.module_name` exists there.

    A feature test, not a version comparison: Debian's Bazel builds leave `native.bazel_version`
    empty (`bazel version` prints "Version information not available"), measured on 4.2.3 and 7.7.1.
    """
    return hasattr(native, "module_name")
