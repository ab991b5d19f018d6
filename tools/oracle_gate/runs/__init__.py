"""Running Bazel and reading what it ran: the Bazel binary and control files, the invocations of
either run (workspace or clean), what each run hides from the change's actions, flags, event
files, the execution log, the traces of outputs collected through a symlinked folder, the results,
the sealed roots (the workspace run's, the clean run's), the clean run, the hidden phase and the
checkout of the merge result (docs/design.md sections 1, 10 and 11).

- `bazel_binary.py`: which program runs as Bazel: a real Bazel binary, never the tree's wrapper.
- `bazel_control.py`: the files of a tree Bazel reads or runs before any sandbox exists.
- `local_paths.py`: the host paths a workspace's Bazel reads outside its own tree.
- `bazel_run.py`: the three Bazel invocations of one run, workspace or clean, and what they ran.
- `launch.py`: how a run starts Bazel: on the host or inside its sealed root.
- `blocks.py`: what each run hides from the change's sandboxed actions.
- `flags.py`: the Bazel flags and target patterns of the runs, and a nested Bazel's environment.
- `events.py`: the Build Event Protocol file of an invocation and the observations its test.xml files hold.
- `execlog.py`: Bazel's execution log: which spawns an invocation ran, and where.
- `collection.py`: traces of an output collected through a symlinked folder.
- `results.py`: JUnit XML test results reduced to per-id observations.
- `sealed_root.py`: the clean run's sealed root: one folder of the run and the system directories.
- `root_session.py`: one shell in a sealed root that runs a run's Bazel commands in turn.
- `procfs.py`: what /proc says about processes (parents, pid namespaces), for the roots' ends.
- `workspace_seal.py`: the workspace run's sealed root: the tree under test, one gate folder, the system directories.
- `kept_root.py`: a sealed root kept between checks, with its shell and Bazel server (the workspace
  run's, the base tip's probe's).
- `clean_run.py`: the clean run: the oracle test and the harness on a pristine tree.
- `sealed_session.py`: one sealed session on a tree the gate writes: fresh (the hidden phase's,
  `record`'s and the judged commit's probes) or kept between checks (the base tip's probe).
- `hidden_phase.py`: the hidden phase of `check --clean`: the rows' hidden samples.
- `probe.py`: one commit's entries called on samples the gate chose, in a sealed root (`record`, the behaviour phase).
- `merged_tree.py`: the gate's own checkout of a merge result.
"""
