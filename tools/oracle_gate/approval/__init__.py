"""Who may change what: the policy file, protected paths and their globs, and the
`oracle-change` label read from each CI platform, and the approval step `check` and `clean-run`
share (`change.py`) (docs/design.md sections 1 and 5)."""
