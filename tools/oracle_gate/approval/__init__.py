"""Who may change what: the policy file (parsed, and read from a tree: `policy.load_policy`),
protected paths and their globs, and the `oracle-change` label read from each CI platform, and the
approval step `check` and `clean-run` share (`change.py`) (docs/design.md sections 1 and 5).

- `policy.py`: `oracles/policy.toml`: label, protected globs, production packages, `uncovered_changes`.
- `paths.py`: what a changed path really touches: spelling variants, symlink targets, submodules.
- `globs.py`: the path globs of protected paths (`**` spans directories).
- `labels.py`: pull-request labels from the command line and CI environments.
- `github_labels.py`: the labels of a GitHub pull request's event given on the checked commit.
- `gitlab_labels.py`: the labels of a GitLab merge request given on the checked commit.
- `change.py`: the approval step: the commits judged, the policy in force, the label and whether it is carried.
"""
