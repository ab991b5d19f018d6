"""Implementation of `oracle_suite`: oracle TOML files and their blobs as verified build inputs.

The only place a blob's hash is written is the `blob_sha256` field of its row in the TOML. The rule
runs the gate's pin check (`tools/oracle_gate/actions/pin_check.py`) as an action that reads the TOML, hashes every referenced blob and
fails the build, naming the blob and the expected hash, when the bytes do not match. The same action
splits every verified blob into two views (docs/design.md section 8): the inputs view, the
only oracle data production code is ever given, and the expectations view, given only to the
judge. A second action draws the rows' generated samples for the run salt, `--define=oracle_salt=S`
(empty when not set). When the gate also names the oracle files whose rows draw samples,
`--define=oracle_salted=PATH,PATH...`, only a suite with one of those files gets the salt: the
others' draw action keeps its arguments from run to run, so Bazel keeps it cached, and it fails
(exit 1) should one of their rows draw after all.

A suite with `references` also runs the rows' reference implementations (`OracleReference`) on
inputs only, and checks their results into the reference view, which only the judge gets.

The pin check, the draw and the reference check run only the gate's own standard-library code, so
they are started by the gate's launcher, `python3 -S -E -B` on the gate's sources, and support
Bazel's persistent workers (tools/bazel/private/gate_action.bzl).

Every action runs only gate code or human-owned oracle code. The gate runs them in an invocation of their own, before the one
that runs the change's code with the oracle sources and the judge's views blocked (docs/design.md
section 10).
"""

load("//tools/bazel:python.bzl", "py_binary")
load("//tools/bazel/private:gate_action.bzl", "gate_action")
load("//tools/bazel/private:reference_deps.bzl", "reference_deps_aspect", "reference_deps_problem")

# schema.HIDDEN_DIR: where the clean run's pristine tree holds the hidden blobs.
_HIDDEN_DIR = "oracles/blobs/_hidden/"

OracleSuiteInfo = provider(
    doc = "The verified views of an oracle suite.",
    fields = {
        "index": "File: JSON index of the verified oracle files and blob pins.",
        "inputs": "File: the inputs view (no bound, no expected value).",
        "generated": "File: the samples drawn for this build's salt, in the inputs view's shape.",
        "expectations": "File: the expectations view (bounds, expected values).",
        "reference": "File: the reference view (the reference implementations' expected values; " +
                     "empty rows for a suite without references).",
        "salt": "string: the salt the generated samples were drawn with.",
        "hidden_inputs": "File: the hidden inputs view (the inputs of the rows' hidden samples; empty rows " +
                         "unless the clean run's tree holds hidden blobs).",
        "hidden_generated": "File: an empty generated-samples document for the hidden caller.",
        "hidden_expectations": "File: the hidden expectations view (a judge's view).",
        "has_hidden": "bool: the suite's blobs include a hidden blob (`oracles/blobs/_hidden/`, only " +
                      "in the clean run's tree); without one the hidden views are empty.",
    },
)

def _oracle_suite_impl(ctx):
    # Before any action is declared: a reference that reaches outside oracles/ never runs.
    refused = reference_deps_problem(ctx.label, ctx.attr.references)
    if refused:
        fail(refused)
    name = ctx.label.name
    index = ctx.actions.declare_file(name + ".index.json")
    inputs = ctx.actions.declare_file(name + ".inputs.json")
    # Under `_sealed/`, a folder of its own, so the gate can block it from every sandboxed action of
    # the invocation that runs the change's code (`--sandbox_block_path`); only the judge reads it.
    expectations = ctx.actions.declare_file("_sealed/" + name + ".expectations.json")
    generated = ctx.actions.declare_file(name + ".generated.json")
    reference = ctx.actions.declare_file("_sealed/" + name + ".reference.json")
    # Under `_hidden/`, blocked from the invocation of the visible callers and the harness; only
    # the hidden caller, in an invocation of its own after them, reads it (docs/design.md section 10).
    hidden_inputs = ctx.actions.declare_file("_hidden/" + name + ".inputs.json")
    hidden_generated = ctx.actions.declare_file("_hidden/" + name + ".generated.json")
    hidden_expectations = ctx.actions.declare_file("_sealed/" + name + ".hidden_expectations.json")
    ctx.actions.write(hidden_generated, '{"rows":{},"salt":"","schema":1}\n')
    salt, unsalted = _salt(ctx)
    reference_inputs = None
    if ctx.attr.reference_caller:
        reference_inputs = ctx.actions.declare_file("_sealed/" + name + ".reference_inputs.json")

    args = ctx.actions.args()
    args.add("--out", index)
    args.add("--inputs", inputs)
    args.add("--expectations", expectations)
    args.add("--hidden-inputs", hidden_inputs)
    args.add("--hidden-expectations", hidden_expectations)
    if reference_inputs:
        args.add("--reference-inputs", reference_inputs)
    if ctx.file.policy:
        args.add("--policy", "{}={}".format(ctx.file.policy.short_path, ctx.file.policy.path))
    for src in ctx.files.srcs:
        args.add("--oracle", "{}={}".format(src.short_path, src.path))
    for blob in ctx.files.blobs:
        args.add("--blob", "{}={}".format(blob.short_path, blob.path))
    _gate_action(
        ctx,
        "pin_check",
        arguments = args,
        inputs = ctx.files.srcs + ctx.files.blobs + ([ctx.file.policy] if ctx.file.policy else []),
        outputs = [index, inputs, expectations, hidden_inputs, hidden_expectations] + ([reference_inputs] if reference_inputs else []),
        mnemonic = "OraclePinCheck",
        progress_message = "Checking oracle hash pins of %s" % ctx.label,
    )

    draw_args = ctx.actions.args()
    draw_args.add("--index", index)
    if unsalted:
        draw_args.add("--unsalted")
    else:
        draw_args.add("--salt", salt)
    draw_args.add("--out", generated)
    for src in ctx.files.srcs:
        draw_args.add("--oracle", "{}={}".format(src.short_path, src.path))
    _gate_action(
        ctx,
        "draw",
        arguments = draw_args,
        inputs = ctx.files.srcs + [index],
        outputs = [generated],
        mnemonic = "OracleDraw",
        progress_message = "Drawing generated samples of %s" % ctx.label,
    )

    if reference_inputs:
        _reference_actions(ctx, reference_inputs, generated, reference)
    else:
        ctx.actions.write(reference, '{"rows":{},"schema":1}\n')

    return [
        # Every view is a default output, so building the suite alone runs every action: the gate
        # does that in an invocation of its own, before any of the change's code runs.
        DefaultInfo(files = depset([index, inputs, generated, expectations, reference, hidden_inputs,
                                    hidden_generated, hidden_expectations])),
        OracleSuiteInfo(
            index = index,
            inputs = inputs,
            generated = generated,
            expectations = expectations,
            reference = reference,
            salt = salt,
            hidden_inputs = hidden_inputs,
            hidden_generated = hidden_generated,
            hidden_expectations = hidden_expectations,
            has_hidden = any([b.short_path.startswith(_HIDDEN_DIR) for b in ctx.files.blobs]),
        ),
        OutputGroupInfo(
            index = depset([index]),
            inputs = depset([inputs]),
            generated = depset([generated]),
            expectations = depset([expectations]),
            reference = depset([reference]),
            hidden_expectations = depset([hidden_expectations]),
        ),
    ]

def _gate_action(ctx, module, arguments, inputs, **kwargs):
    """`gate_action` with this rule's launcher."""
    gate_action(ctx, ctx.attr._launcher, module, arguments, inputs, **kwargs)

def _salt(ctx):
    """(the salt this suite draws with, whether the gate said its files draw nothing): the run salt
    `--define=oracle_salt`, unless `--define=oracle_salted` is given and names none of its files."""
    salted = ctx.var.get("oracle_salted")
    if salted == None:
        return ctx.var.get("oracle_salt", ""), False
    listed = salted.split(",")
    for src in ctx.files.srcs:
        if src.short_path in listed:
            return ctx.var.get("oracle_salt", ""), False
    return "", True

def _reference_actions(ctx, reference_inputs, generated, reference):
    """The `OracleReference` action (the reference implementations, run by the gate's supervisor
    and caller on inputs only, with no production code among its inputs) and the reference check
    that turns its results into the reference view, or fails the build with exit 5."""
    name = ctx.label.name
    observations = ctx.actions.declare_file("_sealed/" + name + ".reference_observations.json")
    log = ctx.actions.declare_file("_sealed/" + name + ".reference.log")
    call_args = ctx.actions.args()
    call_args.add("--inputs", reference_inputs)
    call_args.add("--generated", generated)
    call_args.add("--out", observations)
    call_args.add("--log", log)
    ctx.actions.run(
        executable = ctx.executable.reference_caller,
        arguments = [call_args],
        inputs = [reference_inputs, generated],
        outputs = [observations, log],
        env = {"TZ": "UTC0", "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"},
        mnemonic = "OracleReference",
        progress_message = "Running the reference implementations of %s" % ctx.label,
    )
    check_args = ctx.actions.args()
    check_args.add("--inputs", reference_inputs)
    check_args.add("--generated", generated)
    check_args.add("--observations", observations)
    check_args.add("--out", reference)
    _gate_action(
        ctx,
        "reference_check",
        arguments = check_args,
        inputs = [reference_inputs, generated, observations],
        outputs = [reference],
        mnemonic = "OracleReferenceCheck",
        progress_message = "Checking the reference results of %s" % ctx.label,
    )

oracle_suite_rule = rule(
    implementation = _oracle_suite_impl,
    doc = "Oracle TOML files and their JSON blobs, with every blob checked at build time against " +
          "the `blob_sha256` pin of its row. The default outputs are a JSON index of the verified " +
          "files and the views; the output groups `inputs`, `generated` and `expectations` hold the views the " +
          "`oracle_test` rule gives its caller action and its judge.",
    attrs = {
        "srcs": attr.label_list(
            allow_files = [".toml"],
            mandatory = True,
            allow_empty = False,
            doc = "The oracle files (schema 1) whose rows pin the blobs.",
        ),
        "blobs": attr.label_list(
            allow_files = True,
            doc = "The blob files the rows reference; a row whose blob is not here fails the build.",
        ),
        "policy": attr.label(
            allow_single_file = [".toml"],
            doc = "oracles/policy.toml; when given, each row's entry must name an allowed production package.",
        ),
        "reference_caller": attr.label(
            executable = True,
            cfg = "exec",
            doc = "The gate's supervisor and caller with the reference packages (declared by the " +
                  "`oracle_suite` macro from its `references`); None for a suite without references.",
        ),
        "references": attr.label_list(
            aspects = [reference_deps_aspect],
            doc = "The reference libraries the `reference_caller` holds (the macro's `references`), " +
                  "only checked: one that is not in `oracles/` of the main repository, or depends on " +
                  "a target that is not (production, harness, the gate, a third-party repository), " +
                  "fails the analysis with one `oracle-gate: [5]` line naming both.",
        ),
        "_launcher": attr.label(
            default = Label("//tools/oracle_gate:action_launcher"),
            executable = True,
            cfg = "exec",
            doc = "The script that starts the pin check, the draw and the reference check " +
                  "(`gate_launcher`), with the gate's sources and the interpreter as its runfiles.",
        ),
    },
)

def oracle_suite(name, srcs, blobs = [], policy = None, references = [], visibility = None, **kwargs):
    """Declares the oracle suite `name`: its oracle files and blobs, pin-checked and split into views.

    Args:
      name: the suite's name.
      srcs: the oracle files.
      blobs: the blob files their rows pin.
      policy: oracles/policy.toml.
      references: the `py_library` targets of the reference implementations under
        `oracles/reference/` that rows name in `reference`; they run in an `OracleReference` action
        of their own, with the gate's caller and nothing of the change's code. A dependency outside
        `oracles/` (production, third-party) fails the suite's build with exit 5.
      visibility: the suite's visibility.
      **kwargs: passed to the rule (tags, testonly).
    """
    reference_caller = None
    if references:
        # Under `_sealed/`, as the views are: the gate blocks that folder from every action that
        # runs the change's code, so neither the reference's runfiles nor its results reach it.
        reference_caller = "_sealed/%s.reference_caller" % name
        py_binary(
            name = reference_caller,
            srcs = [Label("//tools/oracle_gate:actions/observe.py"), Label("//tools/oracle_gate:actions/caller.py")],
            main = Label("//tools/oracle_gate:actions/observe.py"),
            deps = references,
            tags = ["manual"],
            visibility = ["//visibility:private"],
        )
    oracle_suite_rule(
        name = name,
        srcs = srcs,
        blobs = blobs,
        policy = policy,
        reference_caller = (":" + reference_caller) if reference_caller else None,
        references = references,
        visibility = visibility,
        **kwargs
    )
