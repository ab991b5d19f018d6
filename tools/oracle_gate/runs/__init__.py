"""Running Bazel and reading what it ran: the Bazel binary and server, the invocations of the
workspace run, what each run hides from the change's actions, the execution log, the results, the
sealed root and the clean run (docs/design.md sections 1, 7 and 9)."""
