"""How the gate's own actions run: the pin check, the draw and the reference check.

They run only the gate's standard-library code, so they need no `py_binary` launcher and its second
interpreter. `gate_launcher` writes one shell script, `exec PYTHON -S -E -B -c BOOTSTRAP "$@"`, with
the Python toolchain's interpreter: no `site`, no `PYTHON*` variables from the environment, no
bytecode written. `BOOTSTRAP` puts the gate's root after the standard library on `sys.path` (not the
current directory, which is the execution root) and hands the rest of the command line to
`tools/oracle_gate/actions/worker.py` `launch`: the action's module, then its flag file.

`gate_action` runs a module through that script. Each action supports Bazel's persistent workers
(`supports-workers`), so under `--strategy=MNEMONIC=worker` (the gate passes it to its own
view-building invocation, docs/design.md section 8) one interpreter, its modules imported once,
serves every action of that mnemonic; under any other strategy the script runs once per action on
its flag file. One script serves every suite, and the gate's sources and the interpreter are the actions' tools, so
every suite's actions share a worker and a change to the gate's sources starts a new one.
"""

_PY_TOOLCHAIN = "@bazel_tools//tools/python:toolchain_type"

# The file whose path tells where the gate's root is: the part of its path before this.
_ANCHOR = "tools/oracle_gate/actions/worker.py"

# Run by `python3 -S -E -B -c`; no single quote, so it sits in the script's single quotes.
_BOOTSTRAP = ("import sys; sys.path = [p for p in sys.path if p] + [\"%s\"]; " +
              "from tools.oracle_gate.actions.worker import launch; raise SystemExit(launch(sys.argv[1:]))")

def _quote(text):
    return "'" + text.replace("'", "'\\''") + "'"

def _gate_launcher_impl(ctx):
    runtime = ctx.toolchains[_PY_TOOLCHAIN].py3_runtime
    anchor = [f for f in ctx.files.srcs if f.path.endswith(_ANCHOR)]
    if not anchor:
        fail("the gate's sources have no " + _ANCHOR)
    root = anchor[0].path[:-len(_ANCHOR)].rstrip("/") or "."
    if '"' in root or "\\" in root:
        fail("the gate's root %r holds a quote or a backslash" % root)
    interpreter = runtime.interpreter_path or runtime.interpreter.path
    script = ctx.actions.declare_file(ctx.label.name + ".sh")
    ctx.actions.write(
        script,
        "#!/bin/sh\n# The gate's action launcher (tools/bazel/private/gate_action.bzl).\nexec %s -S -E -B -c %s \"$@\"\n" %
        (_quote(interpreter), _quote(_BOOTSTRAP % root)),
        is_executable = True,
    )
    # The interpreter is a tool of every action: a toolchain whose runtime is a File (the autodetecting
    # one's `py3wrapper.sh`) names it by its execution-root path, which the sandbox and a worker's
    # sandbox hold only if it is an input.
    interpreter = [] if runtime.interpreter_path else [runtime.interpreter]
    files = depset(ctx.files.srcs + interpreter, transitive = [runtime.files] if runtime.files else [])
    return [DefaultInfo(executable = script, files = depset([script]), runfiles = ctx.runfiles(transitive_files = files))]

gate_launcher = rule(
    implementation = _gate_launcher_impl,
    doc = "The shell script that starts the gate's own actions (`gate_action`) with the Python " +
          "toolchain's interpreter, `-S -E -B`, on the gate's sources.",
    attrs = {
        "srcs": attr.label_list(
            allow_files = [".py"],
            mandatory = True,
            doc = "The gate's standard-library sources the actions import.",
        ),
    },
    executable = True,
    toolchains = [_PY_TOOLCHAIN],
)

def gate_action(ctx, launcher, module, arguments, inputs, **kwargs):
    """Runs `tools/oracle_gate/actions/<module>.py`'s `main` on `arguments`.

    Args:
      ctx: the rule's context.
      launcher: the `gate_launcher` target (its `FilesToRunProvider` is the executable; its
        runfiles, the gate's sources and the Python runtime of the execution platform, are the
        action's tools).
      module: the action's module under tools/oracle_gate/actions/ (`worker.ACTIONS` lists them).
      arguments: one `Args`; it is written to a flag file, as a worker's request needs.
      inputs: the action's other inputs (Files).
      **kwargs: passed to `ctx.actions.run` (outputs, mnemonic, progress_message).
    """
    arguments.use_param_file("@%s", use_always = True)
    arguments.set_param_file_format("multiline")
    ctx.actions.run(
        executable = launcher[DefaultInfo].files_to_run,
        arguments = [module, arguments],
        inputs = inputs,
        tools = launcher[DefaultInfo].default_runfiles.files,
        execution_requirements = {"supports-workers": "1"},
        **kwargs
    )
