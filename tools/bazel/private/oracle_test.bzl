"""Implementation of `oracle_test`: the protected row runner as a Bazel test.

`oracle_test` is a macro of three targets (docs/design.md section 8):

- `<name>.caller`: a `py_binary` of the gate's supervisor and caller (`tools/oracle_gate/actions/
  observe.py`, `caller.py`) with the production library targets as `deps`.
- `<name>.observations`: an `OracleCall` action that runs that binary on the suite's inputs view and
  generated samples, and nothing else: production code never has a bound or an expected value among
  its declared inputs. It writes the observations and the caller's log.
- `<name>`: a `py_test` whose main is the judge (`actions/judge.py`), with only the gate package as a
  dependency and the expectations view, the reference view, the generated samples, the observations
  and the log as data. It writes one JUnit
  testcase per invariant; these are the only testcases the gate counts as invariant outcomes.

`--define=oracle_run=clean` (set by the gate's clean run) changes the caller's time zone, locale
and hash seed, so that results that depend on them differ between the two runs.
"""

load("//tools/bazel:python.bzl", "py_binary", "py_test")
load("//tools/bazel/private:oracle_suite.bzl", "OracleSuiteInfo")

# The caller's environment per run: the clean run differs on purpose (docs/design.md section 9).
# POSIX TZ strings, so no time zone database is needed.
_RUN_ENV = {
    "workspace": {"TZ": "UTC0", "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"},
    "clean": {"TZ": "<+0545>-5:45", "LC_ALL": "C", "LANG": "C", "PYTHONHASHSEED": "1"},
}

# What `observe.py` writes for a view without rows.
_NO_OBSERVATIONS = '{"schema":1,"salt":"","rows":[]}\n'

def _oracle_observations_impl(ctx):
    suite = ctx.attr.suite[OracleSuiteInfo]
    run = ctx.var.get("oracle_run", "workspace")
    if run not in _RUN_ENV:
        fail("--define=oracle_run must be one of %s, got %r" % (", ".join(_RUN_ENV.keys()), run))
    observations = ctx.actions.declare_file(ctx.label.name + ".json")
    log = ctx.actions.declare_file(ctx.label.name + ".log")
    # The hidden caller: the hidden samples' inputs only, its output and log go to the judge alone,
    # and production code's stdout and stderr go nowhere (`observe.py --quiet`).
    if ctx.attr.hidden and not suite.has_hidden:
        # No hidden blob among the suite's blobs, so its hidden views are empty: the caller's
        # empty observations are written without running it.
        ctx.actions.write(observations, _NO_OBSERVATIONS)
        ctx.actions.write(log, "")
        return [
            DefaultInfo(files = depset([observations, log])),
            OutputGroupInfo(observations = depset([observations]), log = depset([log])),
        ]
    views = [suite.hidden_inputs, suite.hidden_generated] if ctx.attr.hidden else [suite.inputs, suite.generated]
    args = ctx.actions.args()
    args.add("--inputs", views[0])
    args.add("--generated", views[1])
    args.add("--out", observations)
    args.add("--log", log)
    if ctx.attr.hidden:
        args.add("--quiet")
    ctx.actions.run(
        executable = ctx.executable.caller,
        arguments = [args],
        inputs = views,
        outputs = [observations, log],
        env = _RUN_ENV[run],
        mnemonic = "OracleCall",
        progress_message = "Calling production entries for %s" % ctx.label,
    )
    return [
        DefaultInfo(files = depset([observations, log])),
        OutputGroupInfo(observations = depset([observations]), log = depset([log])),
    ]

oracle_observations = rule(
    implementation = _oracle_observations_impl,
    doc = "Runs the row caller on an oracle suite's inputs view; outputs the observations and the caller log.",
    attrs = {
        "suite": attr.label(
            mandatory = True,
            providers = [OracleSuiteInfo],
            doc = "The `oracle_suite` whose rows are run.",
        ),
        "caller": attr.label(
            mandatory = True,
            executable = True,
            cfg = "exec",
            doc = "The caller binary: the gate's supervisor and caller with the production library.",
        ),
        "hidden": attr.bool(
            default = False,
            doc = "Run the suite's hidden samples (the hidden inputs view) instead of its visible ones.",
        ),
    },
)

def _action(name):
    """A file of the gate's actions, as a Label: these are the gate's own files, also when
    another repository uses these rules (oracle-gate as a Bazel module)."""
    return Label("//tools/oracle_gate:actions/" + name)

def oracle_test(name, suite, deps, size = "small", tags = [], visibility = None):
    """Declares the oracle test `name` of `suite`, calling entries from the `deps` libraries.

    Args:
      name: the test target's name; its testcases are the invariant outcomes.
      suite: label of the `oracle_suite`.
      deps: the production `py_library` targets the rows' entries live in.
      size: the judge test's size.
      tags: tags of the judge test.
      visibility: visibility of the judge test.
    """
    py_binary(
        name = name + ".caller",
        srcs = [_action("observe.py"), _action("caller.py")],
        main = _action("observe.py"),
        deps = deps,
        tags = ["manual"],
        visibility = ["//visibility:private"],
    )
    oracle_observations(
        name = name + ".observations",
        suite = suite,
        caller = ":" + name + ".caller",
        # The gate selects it by this tag for the invocation that runs the change's code.
        tags = ["oracle_observations"],
        visibility = ["//visibility:private"],
    )
    oracle_observations(
        name = name + ".hidden_observations",
        suite = suite,
        caller = ":" + name + ".caller",
        hidden = True,
        # Built in an invocation of its own, after every other action of the change's code.
        tags = ["oracle_hidden_observations"],
        visibility = ["//visibility:private"],
    )
    for group in ("observations", "log"):
        native.filegroup(
            name = "%s.%s_file" % (name, group),
            srcs = [":" + name + ".observations"],
            output_group = group,
            tags = ["manual"],
            visibility = ["//visibility:private"],
        )
    native.filegroup(
        name = "%s.hidden_observations_file" % name,
        srcs = [":" + name + ".hidden_observations"],
        output_group = "observations",
        tags = ["manual"],
        visibility = ["//visibility:private"],
    )
    for group in ("expectations", "reference", "generated", "hidden_expectations"):
        native.filegroup(
            name = "%s.%s" % (name, group),
            srcs = [suite],
            output_group = group,
            tags = ["manual"],
            visibility = ["//visibility:private"],
        )
    py_test(
        name = name,
        size = size,
        srcs = [_action("judge.py")],
        main = _action("judge.py"),
        args = [
            "--expectations",
            "$(rootpath :%s.expectations)" % name,
            "--observations",
            "$(rootpath :%s.observations_file)" % name,
            "--log",
            "$(rootpath :%s.log_file)" % name,
            "--reference",
            "$(rootpath :%s.reference)" % name,
            "--generated",
            "$(rootpath :%s.generated)" % name,
            "--hidden-expectations",
            "$(rootpath :%s.hidden_expectations)" % name,
            "--hidden-observations",
            "$(rootpath :%s.hidden_observations_file)" % name,
        ],
        data = [
            ":%s.expectations" % name,
            ":%s.reference" % name,
            ":%s.generated" % name,
            ":%s.hidden_expectations" % name,
            ":%s.hidden_observations_file" % name,
            ":%s.observations_file" % name,
            ":%s.log_file" % name,
        ],
        deps = [Label("//tools/oracle_gate")],
        # The gate runs the judge by this tag in an invocation of its own, after the change's code
        # ran with the judge's views blocked.
        tags = ["oracle_judge"] + tags,
        visibility = visibility,
    )
