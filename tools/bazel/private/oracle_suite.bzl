"""Implementation of `oracle_suite`: oracle TOML files and their blobs as verified build inputs.

The only place a blob's hash is written is the `blob_sha256` field of its row in the TOML. The rule
runs `//tools/oracle_gate:pin_check` as an action that reads the TOML, hashes every referenced blob and fails the
build, naming the blob and the expected hash, when the bytes do not match. Targets that depend on an
`oracle_suite` get the TOML files, the blobs and the verified index in their runfiles, so a test
cannot run against unverified bytes.
"""

def _oracle_suite_impl(ctx):
    index = ctx.actions.declare_file(ctx.label.name + ".index.json")
    args = ctx.actions.args()
    args.add("--out", index)
    if ctx.file.policy:
        args.add("--policy", "{}={}".format(ctx.file.policy.short_path, ctx.file.policy.path))
    for src in ctx.files.srcs:
        args.add("--oracle", "{}={}".format(src.short_path, src.path))
    for blob in ctx.files.blobs:
        args.add("--blob", "{}={}".format(blob.short_path, blob.path))
    inputs = ctx.files.srcs + ctx.files.blobs + ([ctx.file.policy] if ctx.file.policy else [])
    ctx.actions.run(
        executable = ctx.executable._pin_check,
        arguments = [args],
        inputs = inputs,
        outputs = [index],
        mnemonic = "OraclePinCheck",
        progress_message = "Checking oracle hash pins of %s" % ctx.label,
    )
    runfiles = ctx.runfiles(files = ctx.files.srcs + ctx.files.blobs + [index])
    return [DefaultInfo(files = depset([index]), runfiles = runfiles)]

oracle_suite = rule(
    implementation = _oracle_suite_impl,
    doc = "Oracle TOML files and their JSON blobs, with every blob checked at build time against " +
          "the `blob_sha256` pin of its row. The default output is a JSON index of the verified " +
          "files; the TOML files and blobs are in the runfiles of anything that depends on it.",
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
            doc = "The checker that hashes blobs and compares them with the pins.",
        ),
    },
)
