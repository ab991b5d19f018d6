"""Hidden samples, end to end: `tax_round_half_even` gets a hidden blob kept in a store outside the
repository. A change that is right on every visible and generated sample and wrong on the hidden
ones passes the workspace run and fails `check --clean` with the store (exit 4, naming only the
row); nothing of a hidden sample reaches any output, and production code cannot read the store;
the real code passes; without the store the hidden part is a note, or exit 1 when required.
A harness that takes files through Bazel's output collection (its output folder replaced by a
symlink into the store, the old place of the clean run's hidden blob, the hidden views of the
output base, another clone, the CI user's home) finds nothing in either run, and the store is
intact afterwards. It needs a nested Bazel: the workspace run, the clean run and the hidden phase
are three sealed roots, each with a Bazel server of its own."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest

from tools.testing.gitrepo import leaks
from tools.testing.workspace_copy import gate, git, nested_env

# Amounts above the row's generated range (amount_cents in [0, 100_000]) and below every stored one
# above it: only the hidden samples hold them. Distinct digits, to find any echo of them.
HIDDEN_AMOUNTS = (987651, 123457, 456793)
ROW = "tax_round_half_even"

# Right wherever the repository can see, wrong on amounts only the hidden blob holds; it also
# shouts every input it gets, writes it to /tmp and $HOME, tries to read the store it was told of,
# and searches its home, the output base above its sandbox and the gate's run folders for a copy of
# the hidden samples (found by a visible caller, it fails a visible sample; by the hidden caller,
# which holds its own inputs view, the hidden part, which fails anyway).
CHEAT = """

_right = apply_rate
_SEARCHED = []


def _find_hidden_copies(roots):
    # Any hidden inputs view with rows, or a blob under a `_hidden` folder, within 5 s of walking.
    import json, os, time
    stop = time.monotonic() + 5
    for top in roots:
        for folder, dirs, files in os.walk(top):
            if time.monotonic() > stop:
                return
            dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev", "external", ".git", "__pycache__")]
            if os.path.basename(folder) != "_hidden":
                continue
            for name in files:
                try:
                    with open(os.path.join(folder, name)) as f:
                        doc = json.load(f)
                except (OSError, ValueError):
                    continue
                if isinstance(doc, list) or (isinstance(doc, dict) and doc.get("rows") and "inputs" in name):
                    raise RuntimeError("LEAKMARK found a hidden copy: " + os.path.join(folder, name))


def apply_rate(amount_cents, rate):  # noqa: F811
    import os, sys
    if not _SEARCHED:
        _SEARCHED.append(True)
        cwd = os.getcwd()
        _find_hidden_copies([os.path.expanduser("~"), os.path.dirname(os.path.dirname(os.path.dirname(cwd))),
                             {HOME_CACHE}])
    print(f"LEAKMARK {amount_cents} {rate}", file=sys.stderr)
    print(f"LEAKMARK {amount_cents} {rate}")
    for folder in ("/tmp", os.path.expanduser("~")):
        try:
            with open(os.path.join(folder, f"leakmark-{amount_cents}"), "w") as f:
                f.write(rate)
        except OSError:
            pass
    try:
        raise RuntimeError("LEAKMARK read the store: " + " ".join(os.listdir({STORE})))
    except OSError:
        pass
    if type(amount_cents) is int and 100_000 < amount_cents < 10_000_000:
        return int(amount_cents * Decimal(rate))
    return _right(amount_cents, rate)
"""


def hidden_blob() -> bytes:
    samples = [{"args": [a, "0.0725"], "expected": round(Fraction(a) * Fraction("0.0725"))} for a in HIDDEN_AMOUNTS]
    return (json.dumps(samples, indent=1) + "\n").encode()


@pytest.fixture(scope="module")
def store(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store, outside the repository, and `main` with the row's hidden_sha256 (`hidden add`)."""
    folder = tmp_path_factory.mktemp("hidden-store")
    blob = tmp_path_factory.mktemp("authoring") / "tax_hidden.json"
    blob.write_bytes(hidden_blob())
    proc = gate(repo, "hidden", "add", str(blob), "--id", ROW, "--store", str(folder))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = proc.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r'hidden_sha256 = "[0-9a-f]{64}"', line), proc.stdout
    toml = repo / "oracles/billing.toml"
    text = toml.read_text()
    toml.write_text(text.replace('id = "tax_round_half_even"\n', f'id = "tax_round_half_even"\n{line}\n', 1))
    with open(repo / "oracles/CHANGELOG.md", "a") as f:
        f.write(f"\n- {ROW}: hidden samples added (amounts above the generated range).\n")
    assert gate(repo, "manifest", "--write").returncode == 0
    git(repo, "add", "-A", "oracles")
    git(repo, "commit", "-q", "--no-gpg-sign", "-m", "tax_round_half_even: hidden samples")
    blob.unlink()
    return folder


def with_store(folder: Path) -> dict[str, str]:
    return dict(nested_env(), ORACLE_GATE_HIDDEN_STORE=str(folder))


def test_the_real_code_passes_its_hidden_samples_and_without_a_store_they_are_a_note(repo, store):
    proc = gate(repo, "check", "--base", "HEAD", "--clean", env=with_store(store))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "hidden samples      1 of 1 row(s) passed their hidden samples in the hidden phase" in proc.stdout, (
        proc.stdout
    )
    proc = gate(repo, "check", "--base", "HEAD", "--clean")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert f"hidden samples: not run (ORACLE_GATE_HIDDEN_STORE is not set): {ROW}" in proc.stdout, proc.stdout
    # Not `ok`: the summary line and the row's line in the per-id table say they did not run.
    assert "  NOT RUN  hidden samples      1 row(s) with hidden samples: not run (see the note)" in proc.stdout, (
        proc.stdout
    )
    assert re.search(rf"^  {ROW} .* hidden samples: NOT RUN$", proc.stdout, re.M), proc.stdout


def test_answers_right_only_where_the_repository_can_see_fail_on_the_hidden_samples(repo, store, tmp_path):
    git(repo, "checkout", "-q", "-b", "cheat")
    tax = repo / "billing/tax.py"
    cache = str(Path(nested_env()["HOME"]) / ".cache" / "oracle-gate")
    tax.write_text(tax.read_text() + CHEAT.replace("{STORE}", repr(str(store))).replace("{HOME_CACHE}", repr(cache)))
    git(repo, "commit", "-q", "--no-gpg-sign", "-am", "tax: faster for mid-sized amounts")
    junit = tmp_path / "junit.xml"
    # The workspace run alone: every visible and generated sample passes.
    proc = gate(repo, "check", "--base", "main", env=with_store(store))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "hidden samples: clean run only" in proc.stdout, proc.stdout
    proc = gate(repo, "check", "--base", "main", "--clean", "--junit", str(junit), env=with_store(store))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out[-4000:]
    assert (
        f"[4] oracles/billing.toml {ROW}: failed on its hidden samples; they are held by the hidden store and not shown"
    ) in proc.stdout, proc.stdout[-3000:]
    assert f"[4] oracles/billing.toml {ROW}: failed: the invariant" not in proc.stdout  # the visible part holds
    assert "read the store" not in out and "found a hidden copy" not in out
    # Nothing of a hidden sample anywhere: the gate's output, its JUnit file, Bazel's output log,
    # the files production code wrote on the host, and the gate's cache.
    log = re.search(r"Bazel's output: (\S+)", proc.stdout)
    texts = {"output": out, "junit": junit.read_text()}
    if log:
        texts["bazel log"] = Path(log.group(1)).read_text(errors="replace")
    home = Path(nested_env()["HOME"])
    for amount in HIDDEN_AMOUNTS:
        for name, text in texts.items():
            assert not leaks(str(amount), text), (name, amount)
        for folder in (Path("/tmp"), home, Path(nested_env()["TMPDIR"]) if "TMPDIR" in nested_env() else home):
            assert not (folder / f"leakmark-{amount}").exists(), folder
    cache = home / ".cache" / "oracle-gate"
    for path in cache.rglob("*") if cache.exists() else ():
        if path.is_file() and not path.is_symlink() and path.stat().st_size < 1 << 20:
            data = path.read_bytes()
            assert not any(str(a).encode() in data for a in HIDDEN_AMOUNTS), path
    git(repo, "checkout", "-q", "main")


# A genrule that takes a file through Bazel's output collection: its declared output's folder
# becomes a symlink to PLACE (a shell word; `$$run` is the run's folder, `$$ex` the execution root,
# both found from the sandbox's own path), and Bazel's server, outside the sandbox, moves the file
# NAME from there into the change's outputs. Each genrule after the first waits for the one before
# it (`srcs`): a take that fails (nothing of that name there) must not stop the build before the
# takes after it ran, which Bazel's scheduling would otherwise decide.
TAKE = """
genrule(
    name = "take_{n}",
    srcs = [{after}],
    outs = ["take_{n}/{name}"],
    cmd = "d=$$(pwd); ob=$${{d%/sandbox/*}}; ex=$$ob/execroot/$${{d##*/}}; run=$${{ob%/bazel/*}}; " +
          "rm -rf $(@D) && ln -s {place} $(@D)",
)
"""
# Prints whatever the genrules took and whatever it can read of the host, then fails, so that
# Bazel shows its log: the way the hidden samples reached the output before the seal.
SHOW = """
sh_test(
    name = "show_loot",
    srcs = ["show_loot.sh"],
    data = [{data}],
)
"""
# Truncates on amounts only the hidden samples hold: a change that memorised what it took would be
# right there, one that took nothing is wrong there.
WRONG_ON_HIDDEN = """

_right_rate = apply_rate


def apply_rate(amount_cents, rate):  # noqa: F811
    if type(amount_cents) is int and amount_cents > 100_000:
        return int(amount_cents * Decimal(rate))
    return _right_rate(amount_cents, rate)
"""


def attack_places(store: Path, digest: str) -> dict[str, list[tuple[str, str]]]:
    """Each attack of the issue: (place, name) pairs its genrules take."""
    return {
        # The store itself, named by the sha256 its row commits, at the path the workspace run's
        # mounts showed before the seal.
        "store": [(str(store), digest)],
        # Where the clean run's pristine tree held the hidden blob before the hidden phase.
        "pristine tree": [("$$run/tree/oracles/blobs/_hidden", f"{digest}.json")],
        # The pin check's hidden views in the output base: inputs, and the hidden expectations, a judge's view.
        # The hidden expectations first: each run's view-building invocation writes them.
        "views": [
            ("$$ex/bazel-out/k8-fastbuild/bin/oracles/_sealed", "oracles.hidden_expectations.json"),
            ("$$ex/bazel-out/k8-fastbuild/bin/oracles/_hidden", "oracles.inputs.json"),
        ],
        # Nothing to take: the test reads another clone and the CI user's home by absolute path.
        "host files": [],
    }


ATTACKS = ("store", "pristine tree", "views", "host files")


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_harness_that_takes_files_through_output_collection_finds_nothing(repo, store, tmp_path, attack):
    fmt = ("text", "json", "github", "markdown")[ATTACKS.index(attack)]
    git(repo, "checkout", "-q", "-B", "take", "main")
    digest = next(store.iterdir()).name
    clone = tmp_path / "other-clone"
    (clone / "oracles").mkdir(parents=True)
    (clone / "oracles" / "billing.toml").write_text("CLONESECRET-5150\n" * 4)
    home = Path(nested_env()["HOME"])
    (home / "secret.txt").write_text("HOMESECRET-6160\n" * 4)
    places = attack_places(store, digest)[attack]
    build = repo / "harness/BUILD.bazel"
    build.write_text(
        build.read_text()
        + "".join(
            TAKE.format(n=n, name=name, place=place, after=f'":take_{n - 1}"' if n else "")
            for n, (place, name) in enumerate(places)
        )
        + SHOW.format(data=", ".join(f'":take_{n}"' for n in range(len(places))))
    )
    script = repo / "harness/show_loot.sh"
    script.write_text(f"""#!/bin/sh
for f in harness/take_*/*; do [ -e "$f" ] && echo "LOOT $f: $(head -c 2000 "$f")"; done
echo "PROBE store: $(ls {store} 2>&1)"
echo "PROBE mounts: $(grep -c '{store}' /proc/self/mountinfo)"
echo "PROBE clone: $(cat {clone}/oracles/billing.toml 2>&1)"
echo "PROBE home: $(cat {home}/secret.txt 2>&1)"
exit 1
""")
    script.chmod(0o755)
    tax = repo / "billing/tax.py"
    tax.write_text(tax.read_text() + WRONG_ON_HIDDEN)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-gpg-sign", "-m", f"harness: examples ({attack})")
    before = {p.name: p.read_bytes() for p in store.iterdir()}
    junit = tmp_path / "junit.xml"
    proc = gate(
        repo,
        "check",
        "--base",
        "main",
        "--clean",
        "--verbose",
        "--format",
        fmt,
        "--junit",
        str(junit),
        env=with_store(store),
    )
    out = proc.stdout + proc.stderr
    # Both runs ran (the harness's own failure, or the trace, is exit 4 in each) and the hidden
    # phase judged the change wrong on the samples nothing showed it.
    assert proc.returncode == 4, out[-4000:]
    shown = proc.stdout.replace("\\_", "_")
    assert "failed on its hidden samples" in shown, (attack, shown[:6000])
    log = re.search(r"Bazel's output: (\S+)", shown) or re.search(r'"bazel_log": "([^"]+)"', shown)
    texts = {"output": out, "junit": junit.read_text()}
    if log:
        texts["bazel log"] = Path(log.group(1)).read_text(errors="replace")
    # Every file the runs left in the gate's folders of the CI user's home (the test's own files,
    # the secrets' sources among them, lie beside them), by value.
    for path in (home / ".cache").rglob("*"):
        if path.is_file() and not path.is_symlink() and path.stat().st_size < 1 << 20:
            texts[str(path)] = path.read_bytes().decode("utf-8", "replace")
    for name, text in texts.items():
        for secret in (*map(str, HIDDEN_AMOUNTS), "CLONESECRET", "HOMESECRET"):
            assert not leaks(secret, text), (attack, name, secret)
    assert {p.name: p.read_bytes() for p in store.iterdir()} == before, attack
    if attack == "views":
        # What the trick reaches in each root, the run's own judge's views, is caught in both runs.
        for run in ("workspace", "clean"):
            assert re.search(
                rf"oracles.hidden_expectations.json, which the gate protects[^\n]* in the {run} ", shown
            ), (run, shown[:6000])
    if attack == "host files":
        assert "PROBE clone: cat: " in out and "PROBE home: cat: " in out and "PROBE mounts: 0" in out, out[-4000:]
    git(repo, "checkout", "-q", "main")


def test_a_required_hidden_part_fails_closed_without_the_store_or_with_a_wrong_file(repo, store, tmp_path):
    policy = repo / "oracles/policy.toml"
    policy.write_text(policy.read_text() + '\nhidden = "required"\n')
    assert gate(repo, "manifest", "--write").returncode == 0
    git(repo, "commit", "-q", "--no-gpg-sign", "-am", "hidden samples are required")
    proc = gate(repo, "check", "--base", "HEAD", "--clean")
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert '[1] oracles/policy.toml: hidden = "required", but ORACLE_GATE_HIDDEN_STORE is not set' in proc.stdout
    # A store file whose bytes are not its name's.
    wrong = tmp_path / "wrong-store"
    wrong.mkdir()
    for entry in store.iterdir():
        (wrong / entry.name).write_bytes(entry.read_bytes() + b" ")
    proc = gate(repo, "check", "--base", "HEAD", "--clean", env=with_store(wrong))
    assert proc.returncode == 1 and "its bytes have sha256" in proc.stdout, proc.stdout[-3000:]
    # A store inside the repository.
    proc = gate(repo, "check", "--base", "HEAD", "--clean", env=with_store(repo / "billing"))
    assert proc.returncode == 1 and "lies inside the repository" in proc.stdout, proc.stdout[-3000:]
