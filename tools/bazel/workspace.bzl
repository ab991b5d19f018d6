"""WORKSPACE setup of the Python rules: Bazel's native rules on Bazel 4.2, rules_python from Bazel 7.

Usage, in `WORKSPACE` (two steps, because a repository can only be loaded from after it is declared):

```starlark
load("//tools/bazel:workspace.bzl", "python_rules")

python_rules()

load("@oracle_gate_python_rules//:workspace.bzl", "python_dependencies")

python_dependencies(name = "pypi", lock = "//:requirements_lock.txt")

load("@pypi//:requirements.bzl", "install_deps")

install_deps()
```

Under `MODULE.bazel` (bzlmod) the extension in `//tools/bazel:extensions.bzl` declares the same
repository and rules_python's pip extension reads the lock.
"""

load("//tools/bazel/private:python_rules.bzl", "has_bzlmod", "python_rules_repository")

def python_rules(name = "oracle_gate_python_rules", rules_python = None):
    """Declares the repository `//tools/bazel:python.bzl` loads its rules from.

    Args:
      name: the repository name; `python.bzl` loads from `@oracle_gate_python_rules`.
      rules_python: True to use rules_python (the workspace must then have `@rules_python`), False
        for Bazel's native rules; None (default) chooses by the running Bazel: rules_python on a
        Bazel with bzlmod (6.0 and later), whose users have rules_python; native rules before
        (Bazel 4.2.3 on Debian 12, which has no rules_python package).
    """
    if rules_python == None:
        rules_python = has_bzlmod()
    python_rules_repository(
        name = name,
        rules_python = rules_python,
        # The name this repository has where it is used: "" when it is the main repository.
        gate_repository = Label("//tools/bazel:workspace.bzl").workspace_name,
    )
