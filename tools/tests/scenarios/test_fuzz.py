"""Property tests: random TOML, JSON blobs, JUnit files and git paths never crash the gate.

Every input either passes or yields the documented error type (and so a documented exit code).
Hypothesis runs derandomized with no example database, so each run is the same run.
"""

from __future__ import annotations

import json
import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tools.oracle_gate.approval.paths import fold, protected_by, reaches_protected, resolve
from tools.oracle_gate.approval.policy import parse_policy
from tools.oracle_gate.errors import GateError, GitError, OracleError
from tools.oracle_gate.git.gitio import parse_name_status
from tools.oracle_gate.git.tree import REGULAR, Entry
from tools.oracle_gate.runs.results import read_result
from tools.oracle_gate.spec.samples import SampleError, check_shape, load_samples
from tools.oracle_gate.spec.schema import parse_oracle
from tools.oracle_gate.suite.loader import check_blob
from tools.testing.gitrepo import IDS, default_rows, junit, make_project, oracle_toml

FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=300,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

KEYS = ["id", "entry", "kind", "blob", "blob_sha256", "seed", "min", "max", "args", "repeat", "extra"]
scalars = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.booleans(),
    st.text(max_size=20),
    st.sampled_from(
        ["bound", "idempotent", "exact_table", "shop.calc:add", "oracles/blobs/t.json", "a" * 64, "../x", "/abs"]
    ),
)
values = st.one_of(scalars, st.lists(scalars, max_size=4))


@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes_as_an_oracle_file(data):
    result = parse_oracle(data, "oracles/f.toml", ("shop",))
    assert all(isinstance(p, OracleError) and p.code == 5 for p in result.problems)


@FUZZ
@given(st.text(alphabet=string.printable + "[]=\"'{}äß\u2028", max_size=300))
def test_random_text_as_an_oracle_file(text):
    result = parse_oracle(("schema = 1\n" + text).encode(), "oracles/f.toml", ("shop",))
    assert all(p.code == 5 and str(p) for p in result.problems)


@FUZZ
@given(st.lists(st.dictionaries(st.sampled_from(KEYS), values, max_size=8), min_size=1, max_size=4))
def test_random_rows(rows):
    result = parse_oracle(oracle_toml(rows).encode(), "oracles/f.toml", ("shop",))
    for problem in result.problems:
        assert problem.code == 5 and problem.path == "oracles/f.toml"
    for inv in result.invariants:
        assert inv.kind in ("bound", "idempotent", "exact_table")


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5)),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=20,
)


@FUZZ
@given(json_values, st.sampled_from([0, 1, 2]))
def test_random_json_blobs(value, which):
    data = json.dumps(value).encode()
    inv = parse_oracle(oracle_toml(default_rows()).encode(), "oracles/shop.toml", None).invariants[which]
    try:
        check_shape(inv, load_samples(data))
    except SampleError:
        pass
    problems = check_blob(inv, Entry(REGULAR, "x"), data)
    assert all(p.code == 5 for p in problems)


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_as_a_blob(data):
    try:
        load_samples(data)
    except SampleError as exc:
        assert str(exc)


@FUZZ
@given(st.binary(max_size=300))
def test_random_git_diff_output(raw):
    try:
        changes = parse_name_status(raw)
    except GitError as exc:
        assert exc.code == 1
    else:
        assert all(c.path for c in changes)


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["A", "M", "D", "T", "R100", "C50"]),
            st.lists(st.text(min_size=1, max_size=12).filter(lambda s: "\0" not in s), min_size=2, max_size=2),
        ),
        max_size=5,
    )
)
def test_well_formed_diff_output_round_trips(records):
    raw = b""
    expected = []
    for status, (p1, p2) in records:
        paths = [p1, p2] if status[0] in "RC" else [p1]
        raw += status.encode() + b"\0" + b"".join(p.encode("utf-8", "surrogatepass") + b"\0" for p in paths)
        expected += [(status[0], p.encode("utf-8", "surrogatepass").decode("utf-8", "surrogateescape")) for p in paths]
    assert [(c.status, c.path) for c in parse_name_status(raw)] == expected


@FUZZ
@given(st.text(max_size=40), st.dictionaries(st.text(max_size=10), st.text(max_size=10), max_size=5))
def test_random_paths_and_symlinks(path, links):
    globs = ("oracles/**", "tools/**/BUILD.bazel", ".bazelrc")
    fold(path)
    protected_by(path, globs)
    reached = resolve(path, links)
    if reached is not None:
        reaches_protected(reached, globs)


@FUZZ
@given(st.binary(max_size=300))
def test_random_policy(data):
    try:
        parse_policy(data)
    except OracleError as exc:
        assert exc.code == 5


@FUZZ
@given(st.text(max_size=200))
def test_random_junit(text):
    try:
        read_result(("<testsuites>" + text).encode(), "r.xml")
    except GateError as exc:
        assert exc.code == 1


component = st.text(
    alphabet=st.characters(blacklist_characters="/\0", blacklist_categories=("Cs",)), min_size=1, max_size=8
).filter(lambda s: s not in (".", "..", ".git") and "\n" not in s)


@settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=15,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(
        st.tuples(st.sampled_from(["", "oracles/", "harness/", "Oracles/", "shop/"]), component),
        min_size=1,
        max_size=4,
        unique_by=lambda t: (t[0] + t[1]).casefold(),
    )
)
def test_random_paths_in_a_real_repository(tmp_path_factory, gate_factory, names):
    repo = make_project(tmp_path_factory.mktemp("fuzz") / "repo")
    written = []
    for prefix, name in names:
        rel = prefix + name
        try:
            repo.write(rel, b"x\n")
        except OSError:
            continue
        written.append(rel)
    repo.commit("random paths")
    results = junit(tmp_path_factory.mktemp("r"), {i: "passed" for i in IDS})
    code, out, err = gate_factory()("--repo", str(repo.path), "check", "--base", "main", "--results", results)
    assert "Traceback" not in out + err
    assert code in (0, 1, 2, 5), (code, out, err)
    if any(fold(p).startswith("oracles/") for p in written):
        assert code == 2, out
    elif code == 0:
        assert "gate ok" in out
