"""Module extensions of oracle-gate for `MODULE.bazel` (bzlmod).

`python_rules` declares `@oracle_gate_python_rules`, the repository `//tools/bazel:python.bzl`
loads its Python rules from, forwarding to rules_python (bzlmod always has it), and
`@oracle_gate_lock`, a copy of `//:requirements_lock.txt` made only when it holds pins and hashes
alone (rules_python's pip extension passes pip options it finds in a lock on to pip). Usage, in
oracle-gate's own `MODULE.bazel`:

```starlark
python_rules = use_extension("//tools/bazel:extensions.bzl", "python_rules")
use_repo(python_rules, "oracle_gate_lock", "oracle_gate_python_rules")
```

`checked_lock` makes the same checked copy of an adopting repository's lock, for its
`pip.parse(requirements_lock = "@pypi_lock//:requirements_lock.txt")` (what `init --requirements`
writes, docs/adopting.md):

```starlark
checked_lock = use_extension("@oracle_gate//tools/bazel:extensions.bzl", "checked_lock")
checked_lock.lock(name = "pypi_lock", lock = "//:requirements_lock.txt")
use_repo(checked_lock, "pypi_lock")
```
"""

load("//tools/bazel/private:pip_lock_repository.bzl", "checked_lock_repository")
load("//tools/bazel/private:python_rules.bzl", "python_rules_repository")

def _python_rules_impl(module_ctx):
    python_rules_repository(name = "oracle_gate_python_rules", rules_python = True)
    checked_lock_repository(name = "oracle_gate_lock", lock = Label("//:requirements_lock.txt"))

python_rules = module_extension(
    implementation = _python_rules_impl,
    doc = "Declares @oracle_gate_python_rules (rules_python's py_binary, py_library, py_test) and " +
          "@oracle_gate_lock (the checked lock).",
)


def _checked_lock_impl(module_ctx):
    for module in module_ctx.modules:
        for tag in module.tags.lock:
            checked_lock_repository(name = tag.name, lock = tag.lock)

checked_lock = module_extension(
    implementation = _checked_lock_impl,
    tag_classes = {
        "lock": tag_class(attrs = {
            "name": attr.string(mandatory = True, doc = "The repository of the checked copy."),
            "lock": attr.label(mandatory = True, doc = "The lock: pins and sha256 hashes only."),
        }),
    },
    doc = "Declares, per `lock` tag, a repository holding a copy of the lock made only when it holds " +
          "pins and hashes alone (`checked_lock_repository`).",
)
