"""Implementation of `oracle_suite`: oracle TOML files and their blobs as verified build inputs.

The only place a blob's hash is written is the `blob_sha256` field of its row in the TOML. The rule
runs `//tools/oracle_gate:pin_check` as an action that reads the TOML, hashes every referenced blob and
fails the build, naming the blob and the expected hash, when the bytes do not match. The same action
splits every verified blob into two views (docs/design.md section 8): the inputs view, the
only oracle data production code is ever given, and the sealed expectations view, given only to the
judge. A second action draws the rows' generated samples for the run salt, `--define=oracle_salt=S`
(empty when not set).

Both actions run only gate code. The gate runs them in an invocation of their own, before the one
that runs the change's code with the oracle sources and the sealed views blocked (docs/design.md
section 10).
"""

OracleSuiteInfo = provider(
    doc = "The verified views of an oracle suite.",
    fields = {
        "index": "File: JSON index of the verified oracle files and blob pins.",
        "inputs": "File: the inputs view (no bound, no expected value).",
        "generated": "File: the samples drawn for this build's salt, in the inputs view's shape.",
        "expectations": "File: the sealed expectations view (bounds, expected values).",
        "salt": "string: the salt the generated samples were drawn with.",
    },
)

def _oracle_suite_impl(ctx):
    name = ctx.label.name
    index = ctx.actions.declare_file(name + ".index.json")
    inputs = ctx.actions.declare_file(name + ".inputs.json")
    # Under `_sealed/`, a folder of its own, so the gate can block it from every sandboxed action of
    # the invocation that runs the change's code (`--sandbox_block_path`); only the judge reads it.
    expectations = ctx.actions.declare_file("_sealed/" + name + ".expectations.json")
    generated = ctx.actions.declare_file(name + ".generated.json")
    salt = ctx.var.get("oracle_salt", "")

    args = ctx.actions.args()
    args.add("--out", index)
    args.add("--inputs", inputs)
    args.add("--expectations", expectations)
    if ctx.file.policy:
        args.add("--policy", "{}={}".format(ctx.file.policy.short_path, ctx.file.policy.path))
    for src in ctx.files.srcs:
        args.add("--oracle", "{}={}".format(src.short_path, src.path))
    for blob in ctx.files.blobs:
        args.add("--blob", "{}={}".format(blob.short_path, blob.path))
    ctx.actions.run(
        executable = ctx.executable._pin_check,
        arguments = [args],
        inputs = ctx.files.srcs + ctx.files.blobs + ([ctx.file.policy] if ctx.file.policy else []),
        outputs = [index, inputs, expectations],
        mnemonic = "OraclePinCheck",
        progress_message = "Checking oracle hash pins of %s" % ctx.label,
    )

    draw_args = ctx.actions.args()
    draw_args.add("--index", index)
    draw_args.add("--salt", salt)
    draw_args.add("--out", generated)
    for src in ctx.files.srcs:
        draw_args.add("--oracle", "{}={}".format(src.short_path, src.path))
    ctx.actions.run(
        executable = ctx.executable._draw,
        arguments = [draw_args],
        inputs = ctx.files.srcs + [index],
        outputs = [generated],
        mnemonic = "OracleDraw",
        progress_message = "Drawing generated samples of %s" % ctx.label,
    )

    return [
        # Every view is a default output, so building the suite alone runs both actions: the gate
        # does that in an invocation of its own, before any of the change's code runs.
        DefaultInfo(files = depset([index, inputs, generated, expectations])),
        OracleSuiteInfo(index = index, inputs = inputs, generated = generated, expectations = expectations, salt = salt),
        OutputGroupInfo(
            index = depset([index]),
            inputs = depset([inputs]),
            generated = depset([generated]),
            expectations = depset([expectations]),
        ),
    ]

oracle_suite = rule(
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
        "_pin_check": attr.label(
            default = Label("//tools/oracle_gate:pin_check"),
            executable = True,
            cfg = "exec",
            doc = "The checker that hashes blobs, compares them with the pins and writes the views.",
        ),
        "_draw": attr.label(
            default = Label("//tools/oracle_gate:draw"),
            executable = True,
            cfg = "exec",
            doc = "Draws the generated samples for the salt.",
        ),
    },
)
