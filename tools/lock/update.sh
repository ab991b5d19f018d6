#!/usr/bin/env bash
# Regenerates the three locks with pip-compile (pip-tools) in a throw-away virtual environment:
# requirements_lock.txt from requirements.in (what Bazel installs),
# tools/engine/requirements_lock.txt from tools/engine/requirements.in (the loopback engine's own
# virtual environment, tools/engine/venv.py), and tools/lock/style/requirements_lock.txt from
# tools/lock/style/requirements.in (the style tests' ruff and mypy, @style_pypi). Run as `bazel run //:requirements.update`. Existing
# pins are kept unless a requirements file changed; `bazel run //:requirements.update -- --upgrade`
# moves every pin to the newest release.
set -euo pipefail
root="${BUILD_WORKSPACE_DIRECTORY:?run this through bazel run //:requirements.update}"
venv="$(mktemp -d)"
trap 'rm -rf "$venv"' EXIT
# -I: neither the caller's PYTHONPATH nor a user site reaches pip or pip-compile.
python3 -I -m venv "$venv"
"$venv/bin/python" -I -m pip install --quiet --disable-pip-version-check pip-tools
for folder in "$root" "$root/tools/engine" "$root/tools/lock/style"; do
  # In the lock's folder, so its `# via -r requirements.in` comments name the file beside it. The
  # header names this command instead of pip-compile's own flags; no index URL, find-links or other
  # host path is written into the lock.
  (cd "$folder" && CUSTOM_COMPILE_COMMAND="bazel run //:requirements.update" \
    "$venv/bin/python" -I "$venv/bin/pip-compile" --quiet --generate-hashes --allow-unsafe --strip-extras \
    --no-emit-index-url --no-emit-find-links --output-file=requirements_lock.txt "$@" requirements.in)
  echo "wrote $folder/requirements_lock.txt"
done
