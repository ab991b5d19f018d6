#!/bin/bash
# Runs a `bazel` command of this workspace with Debian sid's Bazel 7.7.1 and its packaged rule sets
# (rules_python, rules_cc, rules_java, platforms, skylib), in a Debian sid root made once.
#
#   tools/bazel7/bazel7.sh [--root DIR] [--bind DIR]... BAZEL_ARGS...   # e.g. test --config=bazel7-bzlmod //harness/...
#   tools/bazel7/bazel7.sh [--root DIR] [--bind DIR]... --run CMD ARGS... # any command there, e.g. the gate:
#       ORACLE_GATE_BAZEL_CONFIG=bazel7-bzlmod tools/bazel7/bazel7.sh --run python3 -m tools.oracle_gate check
#   tools/bazel7/bazel7.sh --clean                      # remove the root
#
# Inside the root, at their own paths: the git repository of the current folder (else the folder),
# this oracle-gate checkout, and each --bind DIR (a repository the first one depends on by path, say).
# From a repository that uses the gate: cd /path/to/shop && /path/to/oracle-gate/tools/bazel7/bazel7.sh test //...
#
# Debian 12 cannot run sid's packages (they need sid's libc), so the first call builds a minimal sid
# root with debootstrap from the machine's own Debian mirror (read from /etc/apt, never written
# here) and installs `bazel-bootstrap` and the `bazel-rules-*` packages into it: about a minute
# (52 s measured) and 1.6 GB, about 2 GB with Bazel's caches. Later calls reuse it. The root is DIR,
# else `$ORACLE_GATE_SID_ROOT`, else `$ORACLE_GATE_CACHE/sid-root` or `~/.cache/oracle-gate/sid-root`
# (not /tmp: the sandboxed actions of the host may write there).
#
# A root counts as built only when it passes verification (`verify_root`): its build marker, every
# package of PACKAGES installed, Bazel and Python that run there (Python isolated, `-I`), and the
# unpacked rules_python wheels. Every call verifies it; a root that fails is rebuilt, with one line
# saying why, so a broken or half-built root is repaired with no hand work.
#
# Each call enters the root in a private mount namespace (`unshare --mount`), binds the workspace
# at the same path, and pivots into the root, which makes Bazel's linux-sandbox work there (in a
# plain chroot Bazel falls back to a weaker sandbox without saying so). Every mount lives in that
# namespace, so all of them are gone when the command ends, normally or by a signal (the Bazel
# server, which would keep that namespace alive, is shut down then too). The command
# runs with a clean environment: only PATH, HOME, LANG, TERM and the ORACLE_GATE_* settings (each a
# single line of plain characters, else the call stops), so host settings (PIP_*) stay out.
set -euo pipefail

PACKAGES=(bazel-bootstrap bazel-rules-python bazel-rules-cc bazel-rules-java bazel-platforms bazel-skylib
          python3 python3-pip ca-certificates git bubblewrap)

# The gate's settings (ORACLE_GATE_*) that the command in the root gets, as NAME=VALUE words. A value
# must be one line of plain characters (names, endpoints, paths); anything else stops here, loudly.
passed=()
for name in ${!ORACLE_GATE_@}; do
  value=${!name}
  if ! [[ "$value" =~ ^[A-Za-z0-9_.,:/=@+-]*$ ]]; then
    echo "bazel7: \$$name holds characters other than letters, digits and _.,:/=@+-; not passed into the root" >&2
    exit 1
  fi
  passed+=("$name=$value")
done
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${ORACLE_GATE_CACHE:-$HOME/.cache/oracle-gate}"
root="${ORACLE_GATE_SID_ROOT:-$cache/sid-root}"
if [ "${1:-}" = "--root" ]; then
  root="$2"
  shift 2
fi
# Further folders shown in the root (newline-separated real paths): this checkout, and --bind DIRs.
binds="$(cd "$here/../.." && pwd -P)"
while [ "${1:-}" = "--bind" ]; do
  if [ ! -d "${2:-}" ]; then
    echo "bazel7: --bind ${2:-}: not a folder" >&2
    exit 1
  fi
  binds+=$'\n'"$(cd "$2" && pwd -P)"
  shift 2
done

if [ "$(id -u)" != 0 ]; then
  echo "bazel7: needs root (debootstrap, mount namespaces); run it with sudo" >&2
  exit 1
fi

# The Debian mirror this machine uses, from its apt sources (deb822 or one-line format).
mirror() {
  local uri
  uri=$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -1 || true)
  if [ -z "$uri" ]; then
    uri=$(grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '{print $2}' \
          | grep -v security | head -1 || true)
  fi
  if [ -z "$uri" ]; then
    echo "bazel7: no Debian mirror in /etc/apt/sources.list*; cannot build the sid root" >&2
    exit 1
  fi
  echo "$uri"
}

# Runs a command in the root with the kernel file systems mounted, in its own mount namespace, with
# a clean environment (the command may start with `env NAME=VALUE...` to add to it).
in_root() {
  unshare --mount --propagation private -- /bin/bash -euo pipefail -c '
    root=$1; work=$2; binds=$3; shift 3
    mount --bind "$root" "$root"
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"; mount --make-rslave "$root/sys"
    mount --bind /dev "$root/dev"
    mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts" 2>/dev/null || mount --bind /dev/pts "$root/dev/pts"
    mount -t tmpfs tmpfs "$root/dev/shm"
    cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
    if [ -n "$work" ]; then
      mkdir -p "$root$work"
      mount --rbind "$work" "$root$work"
      while IFS= read -r dir; do
        case "$dir" in ""|"$work"|"$work"/*) continue ;; esac
        mkdir -p "$root$dir"
        mount --rbind "$dir" "$root$dir"
      done <<<"$binds"
    fi
    cd "$root"
    mkdir -p .old-root
    pivot_root . .old-root
    umount -l /.old-root
    rmdir /.old-root
    cd "${work:-/}"
    exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" "$@"
  ' bash "$root" "$work_dir" "${binds:-}" "$@"
}

build_root() {
  local final=$root started=$SECONDS
  root="$final.partial"
  rm -rf --one-file-system "$root"
  mkdir -p "$(dirname "$root")"
  echo "bazel7: building a Debian sid root in $final (once; about a minute)" >&2
  debootstrap --variant=minbase sid "$root" "$(mirror)" >&2
  # The sid Release file a snapshot mirror serves can be past its Valid-Until date.
  echo 'Acquire::Check-Valid-Until "false";' > "$root/etc/apt/apt.conf.d/99no-check-valid-until"
  # Extra CA certificates of this machine (a proxy's), so pip and Bazel's downloader verify TLS.
  if compgen -G "/usr/local/share/ca-certificates/*.crt" > /dev/null; then
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  fi
  work_dir=""
  in_root apt-get update -q >&2
  in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${PACKAGES[@]}" >&2
  in_root update-ca-certificates >&2
  in_root apt-get clean >&2
  packages_stamp
  touch "$root/.oracle-gate-sid-root"
  rm -rf --one-file-system "$final"
  mv "$root" "$final"
  root=$final
  echo "bazel7: sid root ready in $((SECONDS - started)) s" >&2
}

# A stamp naming the package list, so a root built with an older list gets the missing packages.
packages_stamp() {
  touch "$root/.oracle-gate-packages-$(printf '%s\n' "${PACKAGES[@]}" | sha256sum | cut -c1-16)"
}

ensure_packages() {
  [ -f "$root/.oracle-gate-packages-$(printf '%s\n' "${PACKAGES[@]}" | sha256sum | cut -c1-16)" ] && return 0
  echo "bazel7: installing the packages the sid root lacks" >&2
  in_root apt-get update -q >&2
  in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${PACKAGES[@]}" >&2
  in_root apt-get clean >&2
  packages_stamp
}

# rules_python 0.22.1 fetches pip and setuptools wheels too old for sid's Python 3.14. Unpacks the
# hash-pinned wheels of rules_python_wheels.txt into $WHEELS/pypi__<name> inside the root (each a
# repository with a `lib` target, as rules_python declares them), once per content of that file.
WHEELS=/usr/local/share/oracle-gate/rules-python
prepare_wheels() {
  local list="$here/rules_python_wheels.txt" stamp
  stamp="$root$WHEELS/$(sha256sum "$list" | cut -c1-16).done"
  [ -f "$stamp" ] && wheels_present && return 0
  echo "bazel7: unpacking the pip and setuptools wheels of $list into $root$WHEELS" >&2
  rm -rf --one-file-system "$root$WHEELS"
  mkdir -p "$root$WHEELS/download"
  cp "$list" "$root$WHEELS/download/requirements.txt"
  in_root python3 -I -m pip download --quiet --no-deps --only-binary=:all: --require-hashes \
    --disable-pip-version-check -d "$WHEELS/download" -r "$WHEELS/download/requirements.txt" >&2
  in_root python3 -I -c '
import pathlib, sys, zipfile
out = pathlib.Path(sys.argv[1])
for wheel in sorted((out / "download").glob("*.whl")):
    repo = out / ("pypi__" + wheel.name.split("-")[0].lower())
    zipfile.ZipFile(wheel).extractall(repo)
    (repo / "WORKSPACE").write_text("workspace(name = \"%s\")\n" % repo.name)
    (repo / "BUILD.bazel").write_text(
        "package(default_visibility = [\"//visibility:public\"])\n\n"
        "py_library(\n"
        "    name = \"lib\",\n"
        "    srcs = glob([\"**/*.py\"]),\n"
        "    data = glob([\"**/*\"], exclude = [\"**/*.py\", \"**/*.pyc\", \"**/* *\", \"**/*.dist-info/RECORD\", \"BUILD.bazel\", \"WORKSPACE\"]),\n"
        "    imports = [\".\"],\n"
        ")\n")
' "$WHEELS" >&2
  rm -rf "$root$WHEELS/download"
  touch "$stamp"
}

# The modules @bazel_tools declares that Debian does not package (protobuf, zlib, buildozer,
# apple_support): this checkout's stand-ins (third_party/bzlmod), copied into the root and named in
# its system rc file /etc/bazel.bazelrc (which Debian's /etc/bazel/bazelrc imports), so a repository
# that uses the gate needs no line of this machine in its own .bazelrc. Refreshed on every call.
STAND_INS=/usr/local/share/oracle-gate/bzlmod
prepare_stand_ins() {
  local source="$here/../../third_party/bzlmod" name rc=""
  rm -rf --one-file-system "$root$STAND_INS"
  mkdir -p "$root$STAND_INS"
  cp -R "$source"/. "$root$STAND_INS/"
  for name in $(ls "$source"); do
    [ -f "$source/$name/MODULE.bazel" ] && rc+="common --override_module=$name=$STAND_INS/$name"$'\n'
  done
  printf '# Written by oracle-gate tools/bazel7/bazel7.sh: offline stand-ins for modules Debian does not package.\n%s' \
    "$rc" > "$root/etc/bazel.bazelrc"
}

# Whether every wheel of rules_python_wheels.txt is unpacked (its package folder has __init__.py).
wheels_present() {
  local name
  for name in $(sed -nE 's/^([A-Za-z0-9_.-]+)==.*/\1/p' "$here/rules_python_wheels.txt" | tr 'A-Z-' 'a-z_'); do
    [ -f "$root$WHEELS/pypi__$name/$name/__init__.py" ] || return 1
  done
}

# Prints why the root does not count as built (one line) and fails, or succeeds silently.
verify_root() {
  local work_dir="" status missing package
  if [ ! -f "$root/.oracle-gate-sid-root" ]; then
    echo "no build marker (an interrupted build)"
    return 1
  fi
  # dpkg-query exits 1 when a package is unknown; the loop below names each one that is missing.
  status=$(in_root dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${PACKAGES[@]}" 2>/dev/null || true)
  missing=$(awk '$2 != "installed" {printf "%s ", $1}' <<<"$status")
  for package in "${PACKAGES[@]}"; do
    grep -q "^$package " <<<"$status" || missing+="$package "
  done
  if [ -n "$missing" ]; then
    echo "packages not installed: ${missing% }"
    return 1
  fi
  if ! status=$(in_root bazel --version 2>&1) || ! grep -q '^bazel 7\.' <<<"$status"; then
    echo "bazel --version printed: $(tail -n 1 <<<"$status")"
    return 1
  fi
  if ! status=$(in_root python3 -I -c 'import pip, ssl' 2>&1); then
    echo "python3 cannot import pip and ssl: $(tail -n 1 <<<"$status")"
    return 1
  fi
}

if [ "${1:-}" = "--clean" ]; then
  rm -rf --one-file-system "$root.partial"
  if [ -d "$root" ]; then
    if [ -f "$root/.oracle-gate-sid-root" ] && [ "$(id -u)" = 0 ]; then
      work_dir=$(git rev-parse --show-toplevel 2>/dev/null || pwd)
      in_root bazel shutdown >/dev/null 2>&1 || true
    fi
    rm -rf --one-file-system "$root"
    echo "bazel7: removed $root" >&2
  fi
  exit 0
fi

work_dir=""
if [ ! -e "$root" ]; then
  build_root
else
  [ -f "$root/.oracle-gate-sid-root" ] && ensure_packages
  if ! why=$(verify_root); then
    echo "bazel7: the sid root in $root fails verification ($why); rebuilding it" >&2
    build_root
  fi
fi
if ! why=$(verify_root); then
  echo "bazel7: the sid root just built in $root fails verification ($why)" >&2
  exit 1
fi
work_dir=$(git rev-parse --show-toplevel 2>/dev/null || pwd)
prepare_wheels
prepare_stand_ins
if ! wheels_present; then
  echo "bazel7: the rules_python wheels are missing from $root$WHEELS after unpacking" >&2
  exit 1
fi
echo "bazel7: sid root $root, $(du -sh --one-file-system "$root" 2>/dev/null | cut -f1)" >&2
# The Bazel servers would outlive the command, and with them the mount namespace they were started
# in: when the command ends, however it ends, stop the server of every shown folder that is a Bazel
# workspace (the command may have run Bazel in any of them, e.g. the gate with --repo).
shutdown_all() {
  local dir
  while IFS= read -r dir; do
    if [ -n "$dir" ] && { [ -e "$dir/WORKSPACE" ] || [ -e "$dir/WORKSPACE.bazel" ] || [ -e "$dir/MODULE.bazel" ]; }; then
      in_root /bin/sh -c 'cd "$1" && bazel shutdown' sh "$dir" >/dev/null 2>&1 || true
    fi
  done <<<"$work_dir"$'\n'"$binds"
}
trap shutdown_all EXIT
if [ "${1:-}" = "--run" ]; then
  shift
  in_root env "${passed[@]}" "$@"
else
  in_root env "${passed[@]}" bazel "$@"
fi
