#!/usr/bin/env bash
# Regenerates requirements_lock.txt from requirements.in with pip-compile (pip-tools) in a
# throw-away virtual environment. Run as `bazel run //:requirements.update`.
set -euo pipefail
root="${BUILD_WORKSPACE_DIRECTORY:?run this through bazel run //:requirements.update}"
venv="$(mktemp -d)"
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check pip-tools
cd "$root"
# The lock's header names this command instead of pip-compile's own flags.
CUSTOM_COMPILE_COMMAND="bazel run //:requirements.update" \
  "$venv/bin/pip-compile" --quiet --generate-hashes --allow-unsafe --strip-extras \
  --no-emit-index-url --no-emit-find-links \
  --output-file=requirements_lock.txt requirements.in
echo "wrote $root/requirements_lock.txt"
