"""Running Bazel and reading what it ran: the Bazel binary and control files, the invocations of
either run (workspace or clean), what each run hides from the change's actions, flags, event
files, the execution log, the traces of outputs collected through a symlinked folder, the results,
the sealed roots (the workspace run's, the clean run's), the clean run, the hidden phase and the
checkout of the merge result (docs/design.md sections 1, 10 and 11)."""
