"""What a suite's reference libraries reach outside `oracles/` (docs/design.md section 8, "References").

A reference runs in the `OracleReference` action with the gate's supervisor and caller and its own
libraries alone: their runfiles are its Python path. `reference_deps_aspect` follows a reference
library's `deps`, `srcs`, `data`, `tools` and `exec_tools` and records, on each path, the first
target that is not in `oracles/` of the main repository: a production or harness package, the gate,
a third-party (pip) or any other external repository. `reference_deps_problem` turns the first one
into the suite's one-line refusal, which `oracle_suite` fails the build with; `check` reads it from
Bazel's events and exits 5 (errors.INVALID_ORACLE).
"""

ReferenceDepsInfo = provider(
    doc = "What a target of `oracles/` reaches outside it (`reference_deps_aspect`).",
    fields = {
        "outside": "depset of str: the first label outside `oracles/` of the main repository on each " +
                   "path of the followed attributes from the target, as a BUILD file writes it; " +
                   "preorder, so a direct dependency comes first.",
    },
)

# The attributes through which a library's sources, data or generated files reach the runfiles of
# the reference action.
_FOLLOWED = ["deps", "srcs", "data", "tools", "exec_tools"]

def _repo(label):
    """The label's repository name ("" for the main repository): `repo_name` where Bazel has it
    (7.1 and later; `workspace_name` is deprecated there), else `workspace_name` (Bazel 4.2)."""
    return label.repo_name if hasattr(label, "repo_name") else label.workspace_name

def in_oracles(label):
    """True for a target of the main repository's `oracles` package or one under it."""
    return not _repo(label) and (label.package == "oracles" or label.package.startswith("oracles/"))

def short_label(label):
    """`label` as a BUILD file writes it: `//pkg` for `//pkg:pkg`, `@repo//pkg:name` for another repository."""
    repo = "@" + _repo(label) if _repo(label) else ""
    name = "" if label.name == label.package.rpartition("/")[2] else ":" + label.name
    return "%s//%s%s" % (repo, label.package, name)

def _targets(value):
    """The targets of an attribute value: a label, a label list, or neither (None, strings)."""
    if type(value) == "Target":
        return [value]
    if type(value) == "list":
        return [v for v in value if type(v) == "Target"]
    return []

def _reference_deps_aspect_impl(target, ctx):
    direct = []
    transitive = []
    for name in _FOLLOWED:
        for dep in _targets(getattr(ctx.rule.attr, name, None)):
            if not in_oracles(dep.label):
                direct.append(short_label(dep.label))
            elif ReferenceDepsInfo in dep:
                transitive.append(dep[ReferenceDepsInfo].outside)
    return [ReferenceDepsInfo(outside = depset(direct, transitive = transitive, order = "preorder"))]

reference_deps_aspect = aspect(
    implementation = _reference_deps_aspect_impl,
    attr_aspects = _FOLLOWED,
    doc = "Records, for a reference library, the first target outside `oracles/` of the main " +
          "repository on each path of `deps`, `srcs`, `data`, `tools` and `exec_tools` (ReferenceDepsInfo); " +
          "it does not follow a path past that target.",
)

def reference_deps_problem(suite, references):
    """The suite's refusal of its `references`, one line for `fail()`, or None when every one stays in `oracles/`.

    Args:
      suite: the suite's label.
      references: the targets of the suite's `references` attribute (with `reference_deps_aspect`).

    Returns:
      `oracle-gate: [5] SUITE: references: REF depends on DEP, outside oracles/; ...` for the
      first reference with a dependency outside `oracles/` (`REF is outside oracles/; ...` when the
      reference itself is), else None.
    """
    why = "a reference may use only oracles/ and the standard library"
    where = "%s//%s:%s" % ("@" + _repo(suite) if _repo(suite) else "", suite.package, suite.name)
    for ref in references:
        if not in_oracles(ref.label):
            return "oracle-gate: [5] %s: references: %s is outside oracles/; %s" % (
                where,
                short_label(ref.label),
                why,
            )
        outside = ref[ReferenceDepsInfo].outside.to_list() if ReferenceDepsInfo in ref else []
        if outside:
            more = " and %d more" % (len(outside) - 1) if len(outside) > 1 else ""
            return "oracle-gate: [5] %s: references: %s depends on %s%s, outside oracles/; %s" % (
                where,
                short_label(ref.label),
                outside[0],
                more,
                why,
            )
    return None
