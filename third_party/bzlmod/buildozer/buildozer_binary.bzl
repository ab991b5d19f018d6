"""`buildozer_binary`: the extension @bazel_tools uses, declaring an empty `buildozer_binary` repository
(`bazel mod tidy`, which would run buildozer from it, is not available offline)."""

def _empty_repository_impl(rctx):
    rctx.file("BUILD.bazel", "# No buildozer offline: `bazel mod tidy` is not available.\n")

_empty_repository = repository_rule(
    implementation = _empty_repository_impl,
    doc = "An empty repository with a BUILD file and no targets.",
)

def _buildozer_binary_impl(module_ctx):
    _empty_repository(name = "buildozer_binary")

buildozer_binary = module_extension(
    implementation = _buildozer_binary_impl,
    doc = "Declares `buildozer_binary` empty (the real one downloads a buildozer binary).",
)
