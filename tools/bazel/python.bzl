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

def py_dist_info(name, dist_name, version, entry_points = {}, visibility = None):
    """Distribution metadata for a production package that Bazel runs from its sources, so that
    `importlib.metadata.version(dist_name)` and `entry_points()` work in every run (docs/adopting.md,
    "Package metadata"): a `<dist>-<version>.dist-info` folder (`METADATA`, `entry_points.txt`)
    generated into `<name>_site/`, on the Python path of every target that depends on `name`.

    Args:
      name: the py_library to add to the production library's `deps`.
      dist_name: the distribution's name, as `[project] name` in pyproject.toml gives it.
      version: its version string.
      entry_points: group -> list of `name = module:attr` lines (`console_scripts`, ...).
      visibility: the library's visibility.
    """
    folder = "{}_site/{}-{}.dist-info".format(name, dist_name.replace("-", "_"), version)
    metadata = "Metadata-Version: 2.1\nName: {}\nVersion: {}\n".format(dist_name, version)
    points = "".join(["[{}]\n{}\n".format(group, "\n".join(lines)) for group, lines in sorted(entry_points.items())])
    files = {"METADATA": metadata, "entry_points.txt": points}
    outs = [folder + "/" + f for f in sorted(files)]
    native.genrule(
        name = name + "_files",
        outs = outs,
        cmd = " && ".join(["printf '%s' {} > $(location {})".format(_shell_quote(files[f]), folder + "/" + f) for f in sorted(files)]),
    )
    _py_library(
        name = name,
        data = outs,
        imports = [name + "_site"],
        visibility = visibility,
    )

def _shell_quote(text):
    """`text` as one shell word of a genrule's `cmd`: single-quoted, and `$` doubled, which Bazel
    would otherwise expand before the shell sees it."""
    return "'" + text.replace("'", "'\\''").replace("$", "$$") + "'"
