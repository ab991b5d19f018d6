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
