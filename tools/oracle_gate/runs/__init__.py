"""Running Bazel and reading what it ran: the Bazel binary and control files, the invocations of
either run (workspace or clean), what each run hides from the change's actions, flags, event
files, the execution log, the results, the sealed root, the clean run and the checkout of the
merge result (docs/design.md sections 1, 10 and 11)."""
