#!/usr/bin/env bash
# Installs what oracle-gate needs on Debian 12 and is missing: git, Python 3 with pip and venv,
# Bazel 4.2.3 (bazel-bootstrap), Debian's rules_java, PostgreSQL (the remote-execution tests'
# private cluster), bubblewrap (`bwrap`, which seals each action the test worker runs) and
# debootstrap (tools/bazel7/bazel7.sh builds its Debian sid root for Bazel 7.7.1 with it).
# Idempotent; run as root (or through sudo).
set -euo pipefail

need=()
command -v git >/dev/null 2>&1 || need+=(git)
command -v bazel >/dev/null 2>&1 || need+=(bazel-bootstrap)
[ -d /usr/share/bazel/rules/java ] || need+=(bazel-rules-java)
[ -x /usr/bin/python3 ] || need+=(python3)
if ! { /usr/bin/python3 -m pip --version || python3 -m pip --version; } >/dev/null 2>&1; then
  need+=(python3-pip)
fi
# For the remote-execution integration tests: venvs (BuildGrid) and a private PostgreSQL cluster.
/usr/bin/python3 -c "import ensurepip" >/dev/null 2>&1 || need+=(python3-venv)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need+=(postgresql)
# The test worker runs every action under bwrap and refuses to start without it.
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)

if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "oracle-gate setup: installing ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
echo "oracle-gate setup: bazel $(command -v bazel), python $(/usr/bin/python3 --version 2>&1), $(git --version)"
