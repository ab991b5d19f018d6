"""The agent-side guard (docs/design.md section 13): the same policy as the merge gate, applied at
the keyboard, before a coding agent's tool call writes a protected path.

- `rules.py`: the protected globs in force, read from the policy on every call.
- `shell.py`: the paths a shell command writes, gives to a program or names.
- `programs.py`: what each program does with its words (readers, writers, wrappers, git).
- `hook.py`: `guard hook`'s decision on one tool call, in the tool's own JSON.
- `install.py`: `guard install`, the agents' settings, instructions and the pre-push hook.
- `texts.py`: the instruction block and the hook commands `install.py` writes.
"""
