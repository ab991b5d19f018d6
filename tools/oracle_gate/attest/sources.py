"""What a statement names the verifier and the repository by: the digest of the gate's own sources
and the repository's URI without credentials (docs/design.md section 14)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import urllib.parse
from collections.abc import Mapping

from tools.oracle_gate.git.gitio import git_env

# The gate package: every `.py` file below it is part of the sources digest.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# An scp-like git remote (`user@host:path`), which urllib does not parse.
_SCP_REMOTE = re.compile(r"(?:[^@/:]+@)?([^/:]+):(.+)")


def sources_digest(package_dir: str = PACKAGE_DIR) -> str:
    """`sha256:<hex>` of the gate's Python sources: the sha256 of the sorted lines
    `<relative path>\\0<sha256 of the file>\\n`, one per `.py` file below `package_dir` (byte-compiled
    caches and other files left out). Two checkouts of one gate version give the same digest.

    Raises:
        OSError: when a source file cannot be read.
    """
    lines = []
    for folder, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, "rb") as handle:
                    digest = hashlib.sha256(handle.read()).hexdigest()
                lines.append(f"{os.path.relpath(path, package_dir)}\0{digest}\n")
    return "sha256:" + hashlib.sha256("".join(sorted(lines)).encode("utf-8", "surrogateescape")).hexdigest()


def repository_uri(repo: str, environ: Mapping[str, str]) -> str:
    """The repository a statement's `resourceUri` names, as `git+<url>` without credentials:
    GitHub Actions' `$GITHUB_SERVER_URL/$GITHUB_REPOSITORY`, GitLab CI's `$CI_PROJECT_URL`, else
    the `origin` remote (user name and password dropped; an scp-like remote written as ssh://),
    else `git+file://<repo>`. Raises nothing."""
    if environ.get("GITHUB_SERVER_URL") and environ.get("GITHUB_REPOSITORY"):
        return f"git+{environ['GITHUB_SERVER_URL'].rstrip('/')}/{environ['GITHUB_REPOSITORY']}"
    if environ.get("CI_PROJECT_URL"):
        return "git+" + _without_credentials(environ["CI_PROJECT_URL"])
    remote = _origin(repo)
    if remote:
        return "git+" + _without_credentials(remote)
    return "git+file://" + urllib.parse.quote(os.path.realpath(repo))


def _origin(repo: str) -> str:
    """The `origin` remote's URL, or "" when there is none."""
    try:
        proc = subprocess.run(
            ["git", "-C", repo, "config", "--get", "remote.origin.url"],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            env=git_env(os.environ),
            check=False,
        )
    except OSError:
        return ""
    return proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else ""


def _without_credentials(url: str) -> str:
    """`url` without a user name or password (a CI token in a remote is a secret)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme and parts.netloc:
        host = parts.netloc.rsplit("@", 1)[-1]
        return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))
    scp = _SCP_REMOTE.fullmatch(url)
    if scp and not url.startswith("/"):
        return f"ssh://{scp.group(1)}/{scp.group(2).lstrip('/')}"
    return "file://" + urllib.parse.quote(os.path.abspath(url)) if url.startswith("/") else url
