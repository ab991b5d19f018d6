"""`vacuity --suggest`: each mutant a row survived, turned into a sample that kills it
(docs/oracles.md, "Samples that kill the survivors").

Candidate inputs are drawn deterministically from a seed (`draw_candidates`): the row's stored
samples, each with one value edited (an int moved by one, made 0, -1, 1 or negated, set to a
constant of the entry function or next to it, or to a bound of the row's generator for that field;
a float likewise; a bool flipped; a string or list emptied, cut by one or grown by one, a string
made a constant of the entry; the same inside lists and objects), the row's own generators when it
has `generate`, then random pairs of edits. Mutation tools (mutmut, cosmic-ray) report survivors
only; test generators that keep mutant-killing tests (EvoSuite, Pynguin) search with a fitness
function and many executions; here one build runs every candidate, so the search is a fixed,
replayable list. They are written into the row's blob in the
copy of the work tree the row runner builds (the pins of the rows that name the blob set to
match), and the row runs once on the entry as it is and once per surviving mutant: one build each,
as `vacuity` runs a mutant. The first candidate whose results differ, the code as it is returning a
value, is the mutant's killing sample: in the row's own blob shape, an `exact_table` sample with
the result as its `expected`. `vacuity --suggest` runs only when the production packages are the
base tip's outside `oracles/` (`base_difference`), so that result is the base tip's.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import os
import random
import tomllib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tools.oracle_gate.authoring.pin import rewrite
from tools.oracle_gate.authoring.promote import blob_text
from tools.oracle_gate.authoring.vacuity import SALT, Mutant, RowRunner, constants, module_file
from tools.oracle_gate.git.gitio import git
from tools.oracle_gate.spec import kinds
from tools.oracle_gate.spec.generate import FloatGen, IntGen, OneOfGen, draw
from tools.oracle_gate.spec.judgement import canonical
from tools.oracle_gate.spec.samples import SampleError, check_sample, load_samples
from tools.oracle_gate.spec.schema import Invariant
from tools.oracle_gate.spec.values import callable_value

DEFAULT_CANDIDATES = 100  # candidate inputs per row
DEFAULT_SEED = 0
# Candidate ints stay signed 64-bit, as a generator's bounds do.
INT_LIMIT = 2**63
# Random pairs of edits tried per wanted candidate before giving up (most are duplicates on tiny samples).
PAIR_TRIES = 20
# What to try when the code as it is fails on the candidates as a whole (a row's `timeout_s` covers them all).
FEWER = "fewer --candidates may fit the row's limits"
# Why a row has no candidates (its stored samples are valid, so only a row whose every candidate
# is refused gets here).
NO_CANDIDATES = "no candidate inputs: the row's stored samples give none and it has no generate table"


@dataclass(frozen=True)
class Suggestion:
    """A surviving mutant and the sample that kills it.

    Attributes:
        mutant: the mutant, as `vacuity` names it (`line N: change`).
        sample: the killing sample in the row's blob shape (an `exact_table` sample with the code as
            it is's result as `expected`), or None when no candidate tells the two apart.
        result: the code as it is's observation of that sample (`{"value": V}`), or None.
        mutant_result: the mutant's observation of it (`{"value": V}` or `{"raised": "Type: message"}`), or None.
        note: why the mutant could not be compared ("" when it could): its run failed as a whole.
    """

    mutant: Mutant
    sample: dict[str, Any] | None = None
    result: Any = None
    mutant_result: Any = None
    note: str = ""


@dataclass(frozen=True)
class RowSuggestions:
    """What `--suggest` found for one row.

    Attributes:
        id: the row's id; seed: the seed the candidates were drawn with.
        candidates: how many candidate inputs were run.
        suggestions: one per surviving mutant, in the order `vacuity` lists them.
        problem: why no candidate was run ("" when they were): the row has none, or the code as it
            is failed on them as a whole.
    """

    id: str
    seed: int
    candidates: int
    suggestions: tuple[Suggestion, ...] = ()
    problem: str = ""


@dataclass(frozen=True)
class Hints:
    """Values worth trying besides a value's neighbours.

    Attributes:
        bounds: the bounds of the row's `int` and `float` generators, by sample field (by position
            in `args` for an `exact_table` row) (`field_bounds`).
        constants: the int, float and str constants of the entry function (`vacuity.constants`):
            a comparison with a constant is told apart at the constant and next to it.
    """

    bounds: Mapping[str | int, Sequence[int | float]] = dataclasses.field(default_factory=dict)
    constants: tuple[int | float | str, ...] = ()


def _number_edits(value: int | float, constants: Sequence[int | float | str]) -> list[Any]:
    """An int's or float's neighbours (one more, one less, 0, -1, 1, its negation), then each
    numeric constant, one less and one more (for an int, the int constants only), in its type."""
    kind = type(value)
    near = [value + 1, value - 1, kind(0), kind(-1), kind(1), -value]
    wanted = (int,) if kind is int else (int, float)
    for constant in constants:
        if type(constant) in wanted:
            near += [kind(constant), kind(constant) - 1, kind(constant) + 1]
    return near


def edits(value: Any, constants: Sequence[int | float | str] = ()) -> Iterator[Any]:
    """Every value one edit away from `value` (a JSON value): numbers as `_number_edits`, a bool
    flipped, a string emptied, cut by its last character, grown by it or made one of the str
    `constants`, a list emptied, cut by its last item or grown by it, and one edit of any item of a
    list or member of an object. A callable (`{"callable": ...}`) and null are left as they are.
    May repeat a value or give `value` itself."""
    if type(value) is bool:
        yield not value
    elif type(value) in (int, float):
        yield from _number_edits(value, constants)
    elif type(value) is str:
        yield from ("", value[:-1], value + value[-1:], *(c for c in constants if type(c) is str))
    elif type(value) is list:
        yield from ([], value[:-1], value + value[-1:])
        for index, item in enumerate(value):
            for edited in edits(item, constants):
                yield [*value[:index], edited, *value[index + 1 :]]
    elif type(value) is dict and callable_value(value) is None:
        for key, member in value.items():
            for edited in edits(member, constants):
                yield {**value, key: edited}


def field_bounds(inv: Invariant) -> dict[str | int, Sequence[int | float]]:
    """The bounds of the row's `int` and `float` generators (and of those a `one_of` offers), by
    sample field (by position in `args` for an `exact_table` row); {} for a row without `generate`."""
    if inv.generate is None:
        return {}
    packed = inv.generate.packed
    found: dict[str | int, Sequence[int | float]] = {}
    for name, gen in inv.generate.fields:
        options = gen.options if isinstance(gen, OneOfGen) else (gen,)
        ends = [end for option in options if isinstance(option, (IntGen, FloatGen)) for end in (option.lo, option.hi)]
        if ends:
            found[packed.index(name) if name in packed else name] = tuple(dict.fromkeys(ends))
    return found


def sample_edits(inv: Invariant, sample: Mapping[str, Any], hints: Hints) -> Iterator[dict[str, Any]]:
    """Every sample one edit away from `sample` (a blob sample of `inv`): one argument edited
    (`edits` with the hints' constants, then its generator's bounds); an `exact_table` sample's
    `expected` is never edited and its `args` keep their length."""
    if kinds.kind(inv.kind).sample == kinds.TABLE:
        args = list(sample.get("args", []))
        for index, arg in enumerate(args):
            for edited in [*edits(arg, hints.constants), *hints.bounds.get(index, ())]:
                yield {**sample, "args": [*args[:index], edited, *args[index + 1 :]]}
        if "receiver" in sample:
            for edited in edits(sample["receiver"], hints.constants):
                yield {**sample, "receiver": edited}
        return
    for key, value in sample.items():
        for edited in [*edits(value, hints.constants), *hints.bounds.get(key, ())]:
            yield {**sample, key: edited}


def _in_range(value: Any) -> bool:
    """True when every int in `value` (a JSON value) is signed 64-bit."""
    if type(value) is int:
        return -INT_LIMIT <= value < INT_LIMIT
    if type(value) is list:
        return all(_in_range(item) for item in value)
    if type(value) is dict:
        return all(_in_range(item) for item in value.values())
    return True


def _usable(rows: Sequence[Invariant], sample: Any) -> bool:
    """True when `sample` is plain JSON (finite floats), keeps its ints signed 64-bit, and is a
    valid blob sample of each of `rows` (every row that names the blob)."""
    try:
        canonical(sample)
    except ValueError:
        return False
    if not _in_range(sample):
        return False
    for inv in rows:
        try:
            check_sample(inv, 0, sample)
        except SampleError:
            return False
    return True


def _inputs_key(sample: Mapping[str, Any]) -> bytes:
    """The canonical JSON of a sample's inputs (without `expected`): two candidates with the same key are one."""
    return canonical({key: value for key, value in sample.items() if key != "expected"})


def _drawn(inv: Invariant, count: int, seed: int) -> list[dict[str, Any]]:
    """`count` samples of the row's own generators (none without `generate`), drawn with the salt
    `suggest-<seed>`, in blob shape (`exact_table`: `expected` null, to be filled)."""
    if inv.generate is None:
        return []
    row = dataclasses.replace(inv, generate=dataclasses.replace(inv.generate, count=count))
    drawn = draw(row, f"suggest-{seed}")
    if kinds.kind(inv.kind).expected_stored:
        return [{**sample, "expected": None} for sample in drawn]
    return drawn


def _pairs(
    inv: Invariant, singles: Sequence[dict[str, Any]], hints: Hints, count: int, seed: int
) -> Iterator[dict[str, Any]]:
    """Samples two edits away from a stored one: a random edit of a random one-edit sample, from
    `random.Random("suggest\\0<row id>\\0<seed>")`, at most PAIR_TRIES * `count` of them."""
    rng = random.Random(f"suggest\0{inv.id}\0{seed}")
    for _ in range(PAIR_TRIES * count if singles else 0):
        more = list(sample_edits(inv, rng.choice(singles), hints))
        if more:
            yield rng.choice(more)


def draw_candidates(
    inv: Invariant,
    stored: Sequence[dict[str, Any]],
    count: int,
    seed: int,
    sharing: Sequence[Invariant] = (),
    constants: Sequence[int | float | str] = (),
) -> list[dict[str, Any]]:
    """Up to `count` distinct candidate inputs for the row, in blob shape, the same for the same
    arguments: its stored samples; one-edit samples (`sample_edits`), up to half of `count` when the
    row has `generate`; the row's own generated samples (`_drawn`); the rest of the one-edit
    samples; then two-edit samples (`_pairs`). Only samples valid for the row and for the rows of
    `sharing` (those that name the same blob) are kept, so the blob they are written to passes the
    pin check. An `exact_table` candidate's `expected` is a placeholder.

    Args:
        inv: the row; stored: its blob's samples (parsed, valid).
        count: the most candidates wanted, >= 1; seed: the seed of the draws and of the pairs.
        sharing: the other rows whose blob is the row's.
        constants: the entry function's constants (`Hints.constants`).
    """
    rows = [inv, *sharing]
    hints = Hints(field_bounds(inv), tuple(constants))
    singles = list(itertools.islice((e for s in stored for e in sample_edits(inv, s, hints)), PAIR_TRIES * count))
    pool: dict[bytes, dict[str, Any]] = {}

    def add(samples: Iterable[dict[str, Any]], limit: int) -> None:
        for sample in samples:
            if len(pool) >= limit:
                return
            key = _inputs_key(sample)
            if key not in pool and _usable(rows, sample):
                pool[key] = sample

    add(stored, count)
    add(singles, count // 2 if inv.generate is not None else count)
    add(_drawn(inv, count, seed), count)
    add(singles, count)
    add(_pairs(inv, singles, hints, count, seed), count)
    return list(pool.values())


def candidate_files(
    inv: Invariant, candidates: Sequence[dict[str, Any]], oracle_files: Mapping[str, bytes]
) -> dict[str, str]:
    """What to write over the runner's copy so that the row runs on `candidates`: its blob holding
    them (`promote.blob_text`), and each oracle file with a row that names the blob, with those rows'
    `blob_sha256` set to the new blob's (`pin.rewrite`), so the pin check passes.

    Args:
        oracle_files: every oracle file of the tree, path -> bytes (valid TOML).

    Raises:
        GateError: (exit 1) as `pin.rewrite`, for a pin that cannot be set in place.
    """
    data = blob_text(candidates)
    digest = hashlib.sha256(data).hexdigest()
    files = {inv.blob: data.decode("utf-8")}
    for path, text in sorted(oracle_files.items()):
        rows = tomllib.loads(text.decode("utf-8")).get("invariant", [])
        pins = {i: digest for i, row in enumerate(rows) if type(row) is dict and row.get("blob") == inv.blob}
        if pins:
            files[path] = rewrite(text, path, pins).decode("utf-8")
    return files


def row_results(observed: Any, ident: str) -> list[Any] | str:
    """The row `ident`'s per-sample observations (blob samples, then generated ones) in the
    observations document `observed`, or why it has none (the reply's or the caller's error)."""
    if type(observed) is not dict or type(observed.get("rows")) is not list:
        return "the caller wrote no observations (it crashed or timed out)"
    row = next((r for r in observed["rows"] if type(r) is dict and r.get("id") == ident), None)
    if row is None or "error" in row:
        return str(row["error"]) if row is not None else "the caller did not run the row"
    try:
        reply = load_samples(str(row.get("reply", "")).encode("utf-8", "surrogatepass"))
    except SampleError as exc:
        return f"malformed reply: {exc}"
    if type(reply) is dict and type(reply.get("error")) is str:
        return str(reply["error"])
    results = reply.get("results") if type(reply) is dict else None
    return results if type(results) is list else "malformed reply: no results"


def first_difference(base: Sequence[Any], mutant: Sequence[Any], count: int) -> int | None:
    """The index of the first of the first `count` samples on which `base` holds a value
    (`{"value": V}`) and `mutant` anything else (another value, an exception, a result that is not
    plain JSON, nothing); None when there is none. A sample the code as it is raises on is skipped:
    as a stored sample it would fail the row."""
    for index in range(min(count, len(base))):
        seen = base[index]
        if type(seen) is not dict or set(seen) != {"value"}:
            continue
        if index >= len(mutant) or canonical(seen) != canonical(mutant[index]):
            return index
    return None


def killing_sample(inv: Invariant, candidate: Mapping[str, Any], value: Any) -> dict[str, Any]:
    """The candidate as a sample of the row's blob: an `exact_table` one with `value`, the code as
    it is's result, as its `expected`; the other kinds' as they are (inputs only)."""
    if kinds.kind(inv.kind).expected_stored:
        return {**candidate, "expected": value}
    return dict(candidate)


def _suggestion(
    inv: Invariant, mutant: Mutant, candidates: Sequence[dict[str, Any]], base: list[Any], got: list[Any] | str
) -> Suggestion:
    """The Suggestion for one mutant from the two runs' results (`row_results`) on `candidates`."""
    if isinstance(got, str):
        return Suggestion(mutant, note=f"the mutant's run on the candidates failed as a whole ({got})")
    index = first_difference(base, got, len(candidates))
    if index is None:
        return Suggestion(mutant)
    return Suggestion(mutant, killing_sample(inv, candidates[index], base[index]["value"]), base[index], got[index])


def suggest_row(
    repo: str,
    inv: Invariant,
    stored: Sequence[dict[str, Any]],
    oracle_files: Mapping[str, bytes],
    survivors: Sequence[Mutant],
    runner: RowRunner,
    count: int = DEFAULT_CANDIDATES,
    seed: int = DEFAULT_SEED,
    sharing: Sequence[Invariant] = (),
) -> RowSuggestions:
    """A killing sample for each mutant the row survived: the candidates (`draw_candidates`) are
    written into the row's blob (`candidate_files`) and the row's oracle file runs through `runner`
    once on the code as it is and once per mutant, with vacuity's salt; the first candidate on which
    the two differ (`first_difference`) kills the mutant.

    Args:
        repo: the work tree, which is the base tip's outside `oracles/` (`base_difference`).
        inv: the row; stored: its blob's samples; oracle_files: every oracle file, path -> bytes.
        survivors: the mutants the row survived (`RowResult.survived`).
        runner: the row runner (`vacuity.open_runner`).
        count, seed: as for `draw_candidates`; sharing: the other rows that name the row's blob.

    Raises:
        GateError: (exit 1) when the runner cannot build the row, or a pin cannot be set in place.
    """
    module = module_file(repo, inv.entry)
    with open(os.path.join(repo, module), encoding="utf-8") as f:
        found_constants = constants(f.read(), inv.entry.split(":", 1)[1])
    candidates = draw_candidates(inv, stored, count, seed, sharing, found_constants)
    if not candidates or not survivors:
        problem = "" if candidates else NO_CANDIDATES
        return RowSuggestions(inv.id, seed, len(candidates), problem=problem)
    files = candidate_files(inv, candidates, oracle_files)
    base = row_results(runner.observe(inv.source, SALT, files), inv.id)
    if isinstance(base, str):
        return RowSuggestions(
            inv.id,
            seed,
            len(candidates),
            problem=f"the code as it is failed on the candidates as a whole ({base}); {FEWER}",
        )
    found = [
        _suggestion(
            inv, m, candidates, base, row_results(runner.observe(inv.source, SALT, {**files, module: m.source}), inv.id)
        )
        for m in survivors
    ]
    return RowSuggestions(inv.id, seed, len(candidates), tuple(found))


def with_killing_samples(blob: bytes, found: RowSuggestions) -> tuple[bytes, int]:
    """The blob `blob` (a JSON array of samples) with each killing sample of `found` appended that it
    does not already hold (as canonical JSON), in the order `vacuity` lists the mutants, and how
    many were appended; `blob` itself when none is new.

    Raises:
        SampleError: when `blob` is not a JSON array (the row's pin check would refuse it too).
    """
    loaded = load_samples(blob)
    if type(loaded) is not list:
        raise SampleError("the blob is not a JSON array of samples")
    samples = list(loaded)
    seen = {canonical(s) for s in samples}
    added = 0
    for suggestion in found.suggestions:
        if suggestion.sample is not None and canonical(suggestion.sample) not in seen:
            seen.add(canonical(suggestion.sample))
            samples.append(suggestion.sample)
            added += 1
    return (blob_text(samples), added) if added else (blob, 0)


def base_difference(repo: str, base: str) -> str:
    """The first file outside `oracles/` whose copy in the work tree `repo` differs from the commit
    `base`'s, or that `base` does not have (an untracked file; ignored ones and `__pycache__` are
    left out); "" when there is none. The whole tree, not only the production packages: a BUILD
    file, a harness library, a lock or a `.bzl` file of a branch changes what the code returns as
    surely as its sources, and vacuity builds the work tree.

    Raises:
        GitError: (exit 1) when git cannot compare them.
    """
    specs = [".", ":(exclude)oracles"]
    changed = git(
        repo, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", base, "--", *specs
    )
    untracked = git(repo, "ls-files", "-z", "--others", "--exclude-standard", "--", *specs)
    paths = (changed + b"\0" + untracked).decode("utf-8", "surrogateescape").split("\0")
    kept = sorted(p for p in paths if p and "__pycache__/" not in p and not p.endswith((".pyc", ".pyo")))
    return kept[0] if kept else ""
