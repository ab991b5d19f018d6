"""A minimal REAPI client for the engine's tests, run with BuildGrid's Python.

Reads a JSON list of actions on stdin, executes them concurrently through the Execution service
(cache lookup skipped) and prints a JSON list of results on stdout, in the same order.

Action: {"root": DIR, "argv": [...], "env": {NAME: VALUE}, "working_directory": "",
         "output_files": [...], "output_directories": [...], "timeout": SECONDS}
        DIR is uploaded as the input root (files with their executable bit, symlinks to
        directories as symlinks); only "root" and "argv" are required.
Result: {"status": CODE, "message": "...", "exit_code": N, "stdout": TEXT, "stderr": TEXT,
         "output_files": {PATH: {"text": TEXT, "executable": BOOL}},
         "output_directories": {PATH: {RELATIVE_FILE: TEXT}}}

Usage: python client_check.py --target grpc://127.0.0.1:PORT < actions.json
       python client_check.py --target grpc://127.0.0.1:PORT --cas-round-trip TEXT
       (uploads TEXT to CAS, reads it back and prints {"digest": "HASH/SIZE", "text": TEXT})
       python client_check.py --target grpc://127.0.0.1:PORT --forge-result TEXT < action.json
       (uploads one cacheable action, asks the ActionCache to store a result with stdout TEXT for
       it, then reads the cache and executes the action with the cache lookup on; prints
       {"update_enabled": BOOL, "update": CODE, "get": CODE, "stdout": TEXT, "cached": BOOL},
       CODE a gRPC status name)
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2 as re_pb2
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2_grpc as re_grpc

# The worker's CAS helpers, from tools/engine (this file runs as a script, under BuildGrid's Python).
sys.path.insert(0, str(Path(os.path.abspath(__file__)).parents[2] / "engine"))
from worker import Cas, digest_of, tree_of

EXECUTE_TIMEOUT_S = 300.0


def upload_action(cas: Cas, spec: dict[str, Any], cacheable: bool = False) -> re_pb2.Digest:
    """Uploads the input root, Command and Action of `spec`; returns the Action digest. The action
    is marked `do_not_cache` unless `cacheable`."""
    blobs: dict[str, bytes] = {}
    root = tree_of(Path(spec["root"]), blobs).root.SerializeToString(deterministic=True)
    root_digest = digest_of(root)
    blobs[root_digest.hash] = root
    command = re_pb2.Command(
        arguments=spec["argv"],
        environment_variables=[
            re_pb2.Command.EnvironmentVariable(name=k, value=v) for k, v in sorted(spec.get("env", {}).items())
        ],
        output_files=sorted(spec.get("output_files", [])),
        output_directories=sorted(spec.get("output_directories", [])),
        working_directory=spec.get("working_directory", ""),
    ).SerializeToString(deterministic=True)
    command_digest = digest_of(command)
    blobs[command_digest.hash] = command
    action = re_pb2.Action(command_digest=command_digest, input_root_digest=root_digest, do_not_cache=not cacheable)
    if "timeout" in spec:
        action.timeout.FromSeconds(int(spec["timeout"]))
    data = action.SerializeToString(deterministic=True)
    blobs[digest_of(data).hash] = data
    cas.write(blobs)
    return digest_of(data)


def text(cas: Cas, digest: re_pb2.Digest) -> str:
    return cas.read([digest])[digest.hash].decode("utf-8", "replace")


def run(channel: grpc.Channel, instance: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Executes one action and returns its result as plain data."""
    cas = Cas(channel, instance)
    request = re_pb2.ExecuteRequest(
        instance_name=instance, action_digest=upload_action(cas, spec), skip_cache_lookup=True
    )
    operation = None
    for operation in re_grpc.ExecutionStub(channel).Execute(request, timeout=EXECUTE_TIMEOUT_S):
        if operation.done:
            break
    if operation is None or not operation.done:
        return {"status": -1, "message": "Execute stream ended without a finished operation"}
    if operation.HasField("error"):
        return {"status": operation.error.code, "message": operation.error.message}
    response = re_pb2.ExecuteResponse()
    operation.response.Unpack(response)
    result = response.result
    out: dict[str, Any] = {
        "status": response.status.code,
        "message": response.status.message,
        "exit_code": result.exit_code,
        "stdout": text(cas, result.stdout_digest),
        "stderr": text(cas, result.stderr_digest),
        "output_files": {
            f.path: {"text": text(cas, f.digest), "executable": f.is_executable} for f in result.output_files
        },
        "output_directories": {},
    }
    for d in result.output_directories:
        tree = re_pb2.Tree.FromString(cas.read([d.tree_digest])[d.tree_digest.hash])
        children = {digest_of(c.SerializeToString(deterministic=True)).hash: c for c in tree.children}
        files: dict[str, str] = {}

        def walk(
            node: re_pb2.Directory,
            prefix: str,
            files: dict[str, str] = files,
            children: dict[str, re_pb2.Directory] = children,
        ) -> None:
            for f in node.files:
                files[prefix + f.name] = text(cas, f.digest)
            for s in node.symlinks:
                files[prefix + s.name] = "-> " + s.target
            for sub in node.directories:
                walk(children[sub.digest.hash], prefix + sub.name + "/")

        walk(tree.root, "")
        out["output_directories"][d.path] = files
    return out


def forge(channel: grpc.Channel, instance: str, spec: dict[str, Any], forged: str) -> dict[str, Any]:
    """Tries to store a forged ActionResult for `spec`'s action, then reads and executes it."""
    cas = Cas(channel, instance)
    action = upload_action(cas, spec, cacheable=True)
    stdout = forged.encode()
    cas.write({digest_of(stdout).hash: stdout})
    capabilities = re_grpc.CapabilitiesStub(channel).GetCapabilities(
        re_pb2.GetCapabilitiesRequest(instance_name=instance), timeout=60
    )
    cache = re_grpc.ActionCacheStub(channel)
    out: dict[str, Any] = {
        "update_enabled": capabilities.cache_capabilities.action_cache_update_capabilities.update_enabled
    }
    result = re_pb2.ActionResult(exit_code=0, stdout_digest=digest_of(stdout))
    for name, call in (
        (
            "update",
            lambda: cache.UpdateActionResult(
                re_pb2.UpdateActionResultRequest(instance_name=instance, action_digest=action, action_result=result),
                timeout=60,
            ),
        ),
        (
            "get",
            lambda: cache.GetActionResult(
                re_pb2.GetActionResultRequest(instance_name=instance, action_digest=action), timeout=60
            ),
        ),
    ):
        try:
            call()
            out[name] = "OK"
        except grpc.RpcError as exc:
            out[name] = exc.code().name
    request = re_pb2.ExecuteRequest(instance_name=instance, action_digest=action, skip_cache_lookup=False)
    operation = None
    for operation in re_grpc.ExecutionStub(channel).Execute(request, timeout=EXECUTE_TIMEOUT_S):
        if operation.done:
            break
    response = re_pb2.ExecuteResponse()
    if operation is not None and operation.HasField("response"):
        operation.response.Unpack(response)
    out["stdout"] = text(cas, response.result.stdout_digest) if response.result.stdout_digest.hash else ""
    out["cached"] = response.cached_result
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="grpc://HOST:PORT")
    parser.add_argument("--instance", default="")
    parser.add_argument("--cas-round-trip", metavar="TEXT", help="only store and fetch TEXT through the CAS")
    parser.add_argument("--forge-result", metavar="TEXT", help="try to store a forged result (stdout TEXT)")
    args = parser.parse_args(argv)
    if args.forge_result is not None:
        spec = json.load(sys.stdin)
        with grpc.insecure_channel(args.target.removeprefix("grpc://")) as channel:
            json.dump(forge(channel, args.instance, spec, args.forge_result), sys.stdout)
        return 0
    if args.cas_round_trip is not None:
        data = args.cas_round_trip.encode()
        digest = digest_of(data)
        with grpc.insecure_channel(args.target.removeprefix("grpc://")) as channel:
            cas = Cas(channel, args.instance)
            cas.write({digest.hash: data})
            back = cas.read([digest])[digest.hash].decode()
        json.dump({"digest": f"{digest.hash}/{digest.size_bytes}", "text": back}, sys.stdout)
        return 0
    specs = json.load(sys.stdin)
    with (
        grpc.insecure_channel(args.target.removeprefix("grpc://")) as channel,
        concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(specs))) as pool,
    ):
        results = list(pool.map(lambda spec: run(channel, args.instance, spec), specs))
    json.dump(results, sys.stdout, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
