"""Who may change what: the policy file (parsed, and read from a tree: `policy.load_policy`),
protected paths and their globs, and the `oracle-change` label read from each CI platform, and the
approval step `check` and `clean-run` share (`change.py`) (docs/design.md sections 1 and 5)."""
