"""Who may change what: the policy file, protected paths and their globs, and the
`oracle-change` label read from each CI platform (docs/design.md sections 1 and 5)."""
