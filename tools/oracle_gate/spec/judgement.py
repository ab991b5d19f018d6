"""Judging observations against the expectations view: the verdict on each invariant from its
expectation row and the caller's observation row, the observation digests (docs/design.md
sections 8 and 9), and the failing samples a person can act on: each one's index (counting from 0),
inputs, result and expected value (`FailingSample`, `FailingSamples`). Pure: the judge action
(`actions/judge.py`) runs it, and so do `vacuity` and the benchmarks; nothing here reads a file or
starts a process.

The failing samples are a report, never part of a digest: the observation digest stays the sha256
of the caller's `results` list (or of `{"error": reason}`), whatever the messages say. So is the
coverage record a reply may carry (`ran`, spec/ran_record.py): kept on the Judgement, never judged.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tools.oracle_gate.spec import kinds, raised, verdicts
from tools.oracle_gate.spec.ran_record import ran_record
from tools.oracle_gate.spec.samples import SampleError, load_samples

if TYPE_CHECKING:
    from tools.oracle_gate.spec.generate import GenerateSpec

# At most this many failing samples are shown per invariant, then "and N more failing sample(s)".
MAX_SHOWN = 10
# Characters of a shown sample's inputs, result or expected value (compact JSON), then "…".
MAX_SHOWN_CHARS = 200
# Characters of a failing sample's message (the verdict's reason).
MAX_MESSAGE_CHARS = 500
ELLIPSIS = "\u2026"
# Hex digits of each sample's observation digest in the JUnit property `sample_sha256`.
SAMPLE_DIGEST_HEX = 16
# The salts a replay line names: those `check --salt` takes (commands/check_cmd.py SALT_PATTERN);
# any other salt (the observations that report it are written beside production code) gets no
# command to copy.
REPLAYABLE_SALT = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def canonical(value: Any) -> bytes:
    """Canonical JSON of a plain value: sorted keys, no spaces, UTF-8, no NaN (the digest input)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode(
        "utf-8", "surrogatepass"
    )


def cut(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """`text` when it has at most `limit` characters (limit >= 1), else its first `limit - 1`
    characters and `…`. Raises nothing."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + ELLIPSIS


def compact(value: Any) -> str:
    """A plain value as compact JSON (sorted keys, as the views are written; non-ASCII kept), not
    cut; a value JSON cannot write (too deep, not plain) as its `repr`. Raises nothing."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return cut(repr(value), MAX_SHOWN_CHARS + 1)


def sample_label(index: int, generated: bool, salt: str) -> str:
    """How every output names a sample: `sample 2 (0-based)` (the blob's array index) or
    `generated sample 0 (salt S, 0-based)` (the index among the row's generated samples)."""
    return f"generated sample {index} (salt {salt}, 0-based)" if generated else f"sample {index} (0-based)"


def replay_line(salt: str) -> str:
    """The line that says how to draw a run's generated samples again: `check --salt S`, or a plain
    `bazel test` with `--define=oracle_salt=S` (docs/oracles.md, "Generated samples"). A salt that
    `check --salt` refuses gets no command; the empty salt is a plain `bazel test`'s without
    `--define=oracle_salt`. Raises nothing."""
    if not salt:
        return "replay: the salt is empty: a plain bazel test without --define=oracle_salt draws the same samples"
    if not REPLAYABLE_SALT.fullmatch(salt):
        return "replay: the run's salt is not one `check --salt` takes, so it cannot be replayed"
    return f"replay: check --salt {salt} (a plain bazel test: --define=oracle_salt={salt})"


# The one word the judge says of a row's hidden samples (its testcase's `hidden` property;
# docs/oracles.md, "Hidden samples"): read back by results.py, judged by hidden.py.
HIDDEN_PASSED = "passed"
HIDDEN_FAILED = "failed"
HIDDEN_ABSENT = "clean run only"
HIDDEN_WORDS = (HIDDEN_PASSED, HIDDEN_FAILED, HIDDEN_ABSENT)


@dataclass(frozen=True)
class FailingSample:
    """One failing sample, as every report shows it.

    Attributes:
        index: 0-based: the sample's index in the blob's JSON array, or among the row's generated
            samples when `generated`.
        generated: True for a sample drawn from the row's `generate` table.
        salt: the salt a generated sample was drawn with, "" for a blob sample.
        inputs: what the caller called the entry with (`bound` the keyword arguments, `idempotent`
            `{"state", "kwargs"}`, `exact_table` the argument list) as compact JSON, cut at
            MAX_SHOWN_CHARS; "" when the expectations view did not record them.
        result: the result as compact JSON, or `raised Type: message`, or why it is not plain JSON;
            cut at MAX_SHOWN_CHARS.
        expected: the expected value as compact JSON (`exact_table`; `idempotent`: the state after
            call 1), or in words (`bound`: `a number in [min, max]`); cut at MAX_SHOWN_CHARS.
        message: the verdict (e.g. `result 0 != expected -1`), cut at MAX_MESSAGE_CHARS.
    """

    index: int
    generated: bool = False
    salt: str = ""
    inputs: str = ""
    result: str = ""
    expected: str = ""
    message: str = ""

    def label(self) -> str:
        """`sample_label` of this sample."""
        return sample_label(self.index, self.generated, self.salt)

    def lines(self) -> list[str]:
        """Two lines: `<label>: <message>`, then `  inputs <inputs> -> result <result>; expected <expected>`.
        Not escaped: a report passes each through the escaping of its format."""
        detail = f"  inputs {self.inputs or '(not recorded)'} -> result {self.result}"
        return [f"{self.label()}: {self.message}", detail + (f"; expected {self.expected}" if self.expected else "")]

    def to_json(self) -> dict[str, Any]:
        """The JSON object of `--format json` and of the judge's `failing_samples` property: index,
        generated, salt, inputs, result, expected, message."""
        return {
            "index": self.index,
            "generated": self.generated,
            "salt": self.salt,
            "inputs": self.inputs,
            "result": self.result,
            "expected": self.expected,
            "message": self.message,
        }

    @classmethod
    def from_json(cls, value: Any) -> FailingSample | None:
        """The sample `to_json` wrote, its texts cut to the limits again; None for any other value
        (a result file is any file the operator names). Raises nothing."""
        texts = ("salt", "inputs", "result", "expected", "message")
        if type(value) is not dict or set(value) != {"index", "generated", *texts}:
            return None
        if type(value["index"]) is not int or value["index"] < 0 or type(value["generated"]) is not bool:
            return None
        if any(type(value[name]) is not str for name in texts):
            return None
        return cls(
            value["index"],
            value["generated"],
            cut(value["salt"], 64),
            cut(value["inputs"]),
            cut(value["result"]),
            cut(value["expected"]),
            cut(value["message"], MAX_MESSAGE_CHARS),
        )


@dataclass(frozen=True)
class FailingSamples:
    """The failing samples of one invariant: the first MAX_SHOWN, and how many failed in all.

    Attributes:
        shown: the first failing samples in sample order (blob samples, then generated), at most MAX_SHOWN.
        count: how many samples failed in all (0 for a row that failed as a whole, or passed).
        salt: the salt of the generated samples when any of them failed (shown or not), else "".
    """

    shown: tuple[FailingSample, ...] = ()
    count: int = 0
    salt: str = ""

    def lines(self) -> list[str]:
        """Each shown sample's `lines`, `and N more failing sample(s)` when more failed, and the
        `replay_line` when a generated sample failed; [] when none failed. Not escaped."""
        out = [line for sample in self.shown for line in sample.lines()]
        if self.count > len(self.shown):
            out.append(f"and {self.count - len(self.shown)} more failing sample(s)")
        if self.salt or any(sample.generated for sample in self.shown):
            out.append(replay_line(self.salt or next(s.salt for s in self.shown if s.generated)))
        return out

    def to_json(self) -> dict[str, Any]:
        """`{"count": N, "salt": S, "shown": [FailingSample.to_json(), ...]}`."""
        return {"count": self.count, "salt": self.salt, "shown": [sample.to_json() for sample in self.shown]}

    def to_text(self) -> str:
        """`to_json` as ASCII-only JSON: every control, non-ASCII and surrogate character written as a
        `\\u` escape, so the text is valid in any XML attribute or line. Raises nothing."""
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)

    @classmethod
    def from_text(cls, text: str) -> FailingSamples:
        """What `to_text` wrote, or an empty FailingSamples for any text it does not write (strict
        JSON, the shape above, at most MAX_SHOWN samples, count >= those shown). Raises nothing."""
        try:
            value = load_samples(text.encode("utf-8", "surrogatepass"))
        except SampleError:
            return cls()
        if type(value) is not dict or set(value) != {"count", "salt", "shown"} or type(value["shown"]) is not list:
            return cls()
        shown = [FailingSample.from_json(item) for item in value["shown"]]
        count, salt = value["count"], value["salt"]
        if type(count) is not int or type(salt) is not str or len(shown) > MAX_SHOWN or None in shown:
            return cls()
        if count < len(shown):
            return cls()
        return cls(tuple(s for s in shown if s is not None), count, cut(salt, 64))


@dataclass
class Judgement:
    """The verdict on one invariant.

    Attributes:
        id: the invariant id.
        ok: True when every sample held.
        reasons: one line per failing sample (`<sample_label>: <verdict>`), or one for the row, in
            sample order.
        digest: the observation digest (sha256 hex).
        sample_digests: one 16-hex-digit digest per sample observation, in order.
        failing: the failing samples with their inputs, results and expected values (empty when
            the row failed as a whole).
        failed: the index of every failing sample (blob samples first, then generated ones, as in
            the reply's `results`); empty when the row failed as a whole.
        ran: the coverage record of the reply (`ran_record.ran_record`): the production functions
            the caller says the row's calls entered; None when the reply has none, or one the gate
            does not accept. Untrusted, and never part of the verdict or a digest.
    """

    id: str
    ok: bool
    reasons: list[str] = field(default_factory=list)
    digest: str = ""
    sample_digests: list[str] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    failing: FailingSamples = field(default_factory=FailingSamples)
    ran: tuple[str, ...] | None = None

    def failure_lines(self) -> list[str]:
        """What the judge's log and its JUnit failure text show: the failing samples' lines, or the
        row's one reason when it failed as a whole; [] when it passed."""
        return self.failing.lines() if self.failing.count else self.reasons[:1]


@dataclass(frozen=True)
class RowData:
    """What the judge knows of a row's samples beyond its expectations row (`judge_row` builds it).

    Attributes:
        expected: the expected value of every sample, in sample order (stored ones, then the
            reference's), for `exact_table`, `agrees` and a `composed` row with a reference; None
            when the row has none (then `exact_table` reads the expectations row's `expected`).
        inputs: every sample's caller inputs, in sample order (`round_trip`, `monotonic`), or None.
        raises: the class each sample must raise, in sample order (a stored sample's `raises`
            name, or the `module:qualname` the reference raised for a row with `raises_agree`), None
            for a sample judged by its value; None when no sample must raise (spec/raised.py).
    """

    expected: Sequence[Any] | None = None
    inputs: Sequence[Any] | None = None
    raises: Sequence[str | None] | None = None


def judge_sample(expect: Mapping[str, Any], index: int, observed: Any, data: RowData = RowData()) -> verdicts.Verdict:
    """Judges one sample's observation (`{"value": V}`, `{"raised": ..., "classes": [...]}` or
    `{"unplain": ...}`): a sample that must raise (`RowData.raises`) by `raised.judge_raises`, any
    other by its row's kind (docs/design.md section 2): its `Kind.judge`, given the sample's inputs
    and expected value when the judge has them; a raised result fails it."""
    if getattr(kinds.kind_of(expect["kind"]), "base_judged", False):
        # Recorded, not judged: check's behaviour phase compares it, a raise included, with the base tip's.
        return verdicts.Verdict(True)
    must_raise = data.raises[index] if data.raises is not None and index < len(data.raises) else None
    if must_raise is not None:
        return raised.judge_raises(observed, must_raise)
    if type(observed) is dict and "raised" in observed:
        found = raised.raised_classes(observed)
        if found is None:
            return verdicts.Verdict(False, "malformed observation: a raised result needs its message and classes")
        return verdicts.Verdict(False, f"raised {found[0]}")
    if type(observed) is not dict or len(observed) != 1:
        return verdicts.Verdict(False, "malformed observation: expected one of value, raised, unplain")
    ((key, value),) = observed.items()
    if key == "unplain":
        return verdicts.Verdict(False, value if type(value) is str else "result is not plain JSON")
    if key != "value":
        return verdicts.Verdict(False, f"malformed observation: unknown key {key!r}")
    kind = kinds.kind_of(expect["kind"])
    if kind is None:
        return verdicts.Verdict(False, f"unknown kind {expect['kind']!r}")
    inputs = data.inputs[index] if data.inputs is not None and index < len(data.inputs) else kinds.MISSING
    return kind.judge(value, expect, inputs, _expected(expect, index, data))


def _expected(expect: Mapping[str, Any], index: int, data: RowData) -> Any:
    """The expected value of the row's sample `index`: the RowData's, else the expectations row's
    `expected`; kinds.MISSING when the judge has none."""
    table = data.expected if data.expected is not None else expect.get("expected")
    return table[index] if (type(table) is list or type(table) is tuple) and index < len(table) else kinds.MISSING


def row_data(
    expect: Mapping[str, Any],
    reference: Sequence[Any] | None,
    generated: Sequence[Any] | None,
    salt: str,
    reference_raises: Sequence[Any] | None = None,
) -> RowData | str:
    """The RowData of one row, or why the judge cannot judge it (a reason for the whole row).

    Args:
        expect: the row of the expectations view.
        reference: the reference's expected values of the row's samples that store none (every
            generated sample of an `exact_table` row; every sample of the others), or None.
        generated: the caller inputs of the row's generated samples (the generated view), or None
            to draw them again for `salt`.
        reference_raises: for a row with `raises_agree`, the class the reference raised on each of
            those samples (`module:qualname`, None where it returned a value), or None.
    """
    data_expected = None
    kind = kinds.kind_of(expect["kind"])
    own = kind is not None and kind.expected_stored
    if expect.get("reference"):
        wanted = expect["generated"] + (0 if own else expect["blob_samples"])
        if (type(reference) is not list and type(reference) is not tuple) or len(reference) != wanted:
            return "no reference values for this row: the reference action's output is missing or short"
        stored = expect.get("expected", []) if own else []
        data_expected = list(stored) + list(reference)
    must_raise = _must_raise(expect, reference_raises, 0 if own else expect["blob_samples"])
    if type(must_raise) is str:
        return must_raise
    inputs = None
    if kind is not None and kind.reads_inputs:
        recorded = expect.get("inputs")
        drawn = list(generated) if generated is not None else _drawn_inputs(expect, salt, expect["generated"])
        inputs = (list(recorded) if type(recorded) is list else []) + drawn
    return RowData(data_expected, inputs, must_raise)


def _must_raise(expect: Mapping[str, Any], reference_raises: Any, judged_stored: int) -> list[str | None] | str | None:
    """`RowData.raises` of a row: the expectations view's `raises` (one name or None per blob
    sample), then the reference's raised classes, or None when no sample must raise; a reason for
    the whole row when the reference's list does not fit (`judged_stored`: how many stored samples
    the reference judged)."""
    stored = expect.get("raises")
    names: list[str | None] = list(stored) if type(stored) is list else []
    if reference_raises is None:
        return names or None
    wanted = expect["generated"] + judged_stored
    if type(reference_raises) is not list or len(reference_raises) != wanted:
        return "no reference values for this row: the reference action's raised classes are missing or short"
    names = (names or [None] * (expect["blob_samples"] - judged_stored)) + list(reference_raises)
    return names


def judge_row(
    expect: Mapping[str, Any],
    observation: Mapping[str, Any] | None,
    salt: str,
    reference: Sequence[Any] | None = None,
    generated: Sequence[Any] | None = None,
    reference_raises: Sequence[Any] | None = None,
) -> Judgement:
    """Judges one invariant from its expectations and the caller action's entry for it.

    Args:
        expect: the row of the expectations view.
        observation: the observations document's row for it (untrusted), or None.
        salt: the run's salt.
        reference, generated, reference_raises: as for `row_data`.
    """
    ident = expect["id"]
    if observation is None:
        return _row_failure(ident, "no observation: the caller action did not run this row")
    if "error" in observation:
        return _row_failure(ident, str(observation["error"]))
    data = row_data(expect, reference, generated, salt, reference_raises)
    if type(data) is str:
        return _row_failure(ident, data)
    try:
        reply = load_samples(str(observation.get("reply", "")).encode("utf-8", "surrogatepass"))
    except SampleError as exc:
        return _row_failure(ident, f"malformed reply: {exc}")
    if type(reply) is not dict or reply.get("id") != ident:
        return _row_failure(ident, "malformed reply: not an object for this row")
    if set(reply) == {"id", "error"} and type(reply["error"]) is str:
        return _row_failure(ident, reply["error"])
    results = reply.get("results")
    expected_count = expect["blob_samples"] + expect["generated"]
    # `ran`, the coverage record, is optional and never judged (ran_record.py).
    if set(reply) - {"ran"} != {"id", "results"} or type(results) is not list:
        return _row_failure(ident, "malformed reply: expected exactly id and results")
    if len(results) != expected_count:
        return _row_failure(ident, f"malformed reply: {len(results)} result(s) for {expected_count} sample(s)", results)
    out = Judgement(
        ident,
        True,
        digest=hashlib.sha256(canonical(results)).hexdigest(),
        sample_digests=[hashlib.sha256(canonical(r)).hexdigest()[:SAMPLE_DIGEST_HEX] for r in results],
        ran=ran_record(reply["ran"]) if "ran" in reply else None,
    )
    _judge_samples(out, expect, results, salt, data)  # type: ignore[arg-type]
    return out


def _judge_samples(
    out: Judgement, expect: Mapping[str, Any], results: Sequence[Any], salt: str, data: RowData = RowData()
) -> None:
    """Judges every sample into `out`: its reasons, and the first MAX_SHOWN failing samples described."""
    blob = expect["blob_samples"]
    picked: list[tuple[int, Any, str]] = []
    count, generated = 0, False
    for index, observed in enumerate(results):
        verdict = judge_sample(expect, index, observed, data)
        if verdict.ok:
            continue
        out.ok = False
        out.failed.append(index)
        is_generated = index >= blob
        out.reasons.append(
            f"{sample_label(index - blob if is_generated else index, is_generated, salt)}: {verdict.reason}"
        )
        count, generated = count + 1, generated or is_generated
        if len(picked) < MAX_SHOWN:
            picked.append((index, observed, verdict.reason))
    if count:
        out.failing = FailingSamples(tuple(describe(expect, picked, salt, data)), count, salt if generated else "")


def describe(
    expect: Mapping[str, Any], picked: Sequence[tuple[int, Any, str]], salt: str, data: RowData = RowData()
) -> list[FailingSample]:
    """The failing samples of one row as reports show them.

    Args:
        expect: the row of the expectations view (its `inputs`, `generate`, `seed` and `args` are
            read when present; a view without them gives samples with empty `inputs`).
        picked: (index among the row's results, the observation, the verdict's reason) per failing
            sample: blob samples first (index < `blob_samples`), then generated ones.
        salt: the salt the generated samples were drawn with; they are drawn again with it, up to
            the last one picked, to show their inputs.
        data: the row's expected values and inputs when the judge has them (`row_data`).

    Returns:
        One FailingSample per picked sample, in order. Raises nothing.
    """
    blob = expect["blob_samples"]
    last = max((index for index, _, _ in picked), default=-1)
    drawn = _drawn_inputs(expect, salt, last - blob + 1) if last >= blob else []
    recorded = expect.get("inputs")
    out = []
    for index, observed, reason in picked:
        generated = index >= blob
        where = index - blob if generated else index
        source = drawn if generated else recorded if type(recorded) is list else []
        inputs = cut(compact(source[where])) if where < len(source) else ""
        result, expected = _result_and_expected(expect, index, observed, data)
        out.append(
            FailingSample(
                where,
                generated,
                salt if generated else "",
                inputs,
                cut(result),
                cut(expected),
                cut(reason, MAX_MESSAGE_CHARS),
            )
        )
    return out


@dataclass(frozen=True)
class _Row:
    """What `generate.draw` reads of a row, rebuilt from the expectations view."""

    id: str
    seed: int | None
    generate: GenerateSpec | None


def _drawn_inputs(expect: Mapping[str, Any], salt: str, limit: int) -> list[Any]:
    """The caller's inputs of the row's first `limit` generated samples, drawn again for `salt`; []
    when the expectations view holds no generator (an older view, a hand-made one)."""
    # Imported here: only the report of a failing generated sample needs them, and every suite's
    # judge is a fresh process whose start-up they would lengthen (docs/performance.md).
    from tools.oracle_gate.spec.generate import draw, spec_from_json
    from tools.oracle_gate.spec.views import caller_inputs

    try:
        spec = spec_from_json(expect["generate"])
        seed = expect.get("seed", 0)
        samples = draw(_Row(expect["id"], seed if type(seed) is int else 0, spec), salt, limit)
        args = expect.get("args", [])
        over = expect.get("over")
        return caller_inputs(
            expect["kind"],
            args if type(args) is list else [],
            samples,
            bool(expect.get("receiver")),
            over if type(over) is str else None,
        )
    except (KeyError, TypeError, ValueError):
        return []


def _result_and_expected(
    expect: Mapping[str, Any], index: int, observed: Any, data: RowData = RowData()
) -> tuple[str, str]:
    """(result, expected) of one failing sample as FailingSample holds them, not cut yet."""
    kind = kinds.kind_of(expect["kind"])
    must_raise = data.raises[index] if data.raises is not None and index < len(data.raises) else None
    if must_raise is not None:
        expected = f"raises {raised.shown_name(raised.class_key(must_raise))} (or a subclass)"
    else:
        expected = _expected_shown(expect, kind, _expected(expect, index, data))
    if type(observed) is dict and "raised" in observed:
        found = raised.raised_classes(observed)
        return (f"raised {found[0]}" if found is not None else "a malformed observation"), expected
    if type(observed) is not dict or len(observed) != 1:
        return "a malformed observation", expected
    ((key, value),) = observed.items()
    if key == "unplain":  # shown after "result": the caller's "result is a ..." reads once
        return (value.removeprefix("result ") if type(value) is str else "not plain JSON"), expected
    if key != "value":
        return "a malformed observation", expected
    if kind is not None and kind.calls == kinds.STATES and type(value) is list and value:
        differs = next((i for i, state in enumerate(value[1:], 1) if not verdicts.strict_equal(value[0], state)), 0)
        if differs:
            return compact(value[differs]), compact(value[0])
    return compact(value), expected


def _expected_shown(expect: Mapping[str, Any], kind: kinds.Kind | None, expected: Any) -> str:
    """A failing sample's expected value as shown: its kind's `Kind.shows` template filled in from
    the expectations row and the sample's expected value ("" when the judge has none); "" for an
    unknown kind."""
    if kind is None:
        return ""
    return kind.shows(expect).format(
        expected=compact(expected) if expected is not kinds.MISSING else "",
        min=compact(expect.get("min")),
        max=compact(expect.get("max")),
        pattern=compact(expect.get("pattern")),
        direction=str(expect.get("direction", "")).replace("_", "-"),
    )


def _row_failure(ident: str, reason: str, results: Any = None) -> Judgement:
    body = results if results is not None else {"error": reason}
    return Judgement(ident, False, [reason], hashlib.sha256(canonical(body)).hexdigest())


def judge_all(
    expectations: Mapping[str, Any],
    observations: Any,
    reference: Mapping[str, Any] | None = None,
    generated: Mapping[str, Any] | None = None,
) -> tuple[list[Judgement], str, list[str]]:
    """Judges every row of the expectations view.

    Args:
        expectations: the parsed expectations view (trusted: written by the pin-check action).
        observations: the parsed observations document (untrusted: written next to production code).
        reference: the parsed reference view `{"rows": {id: [expected, ...]}, "raises": {id:
            [class or None, ...]}}` (trusted: written by the reference-check action from the
            reference's own results; `raises` only for rows with `raises_agree` whose reference
            raised), or None.
        generated: the parsed generated view (trusted: written by the draw action), or None to
            draw the generated samples again for the salt the observations report. When given, its
            salt is the run's salt, and observations that report another one are noted.

    Returns:
        (judgements in id order, the salt the observations report, notes about the observations).
    """
    by_id, salt, notes = _observation_rows(observations)
    declared = {row["id"] for row in expectations["rows"]}
    extra = sorted(set(by_id) - declared)
    if extra:
        notes.append(f"observations for ids no oracle declares were ignored: {', '.join(extra)}")
    drawn, salt = _generated_rows(generated, salt, notes)
    expected = reference.get("rows", {}) if reference is not None and type(reference.get("rows")) is dict else {}
    reference_raised = reference.get("raises") if reference is not None else None
    raised_rows = reference_raised if type(reference_raised) is dict else {}
    judged = [
        judge_row(
            row,
            by_id.get(row["id"]),
            salt,
            expected.get(row["id"]),
            drawn.get(row["id"], []) if generated is not None else None,
            raised_rows.get(row["id"]),
        )
        for row in expectations["rows"]
    ]
    return judged, salt, notes


def _observation_rows(observations: Any) -> tuple[dict[str, Mapping[str, Any]], str, list[str]]:
    """(id -> observation row, the salt the observations report, notes) of the observations document;
    a row given twice becomes an error row."""
    notes: list[str] = []
    by_id: dict[str, Mapping[str, Any]] = {}
    if type(observations) is not dict or type(observations.get("rows")) is not list:
        notes.append("the observations file is malformed; every row fails")
        return by_id, "", notes
    reported = observations.get("salt")
    salt = reported if type(reported) is str else ""
    for row in observations["rows"]:
        if type(row) is not dict or type(row.get("id")) is not str:
            notes.append("an observation row is malformed and was ignored")
            continue
        if row["id"] in by_id:
            notes.append(f"observation row {row['id']} appears twice; the row fails")
            by_id[row["id"]] = {"error": "two observations for one row"}
            continue
        by_id[row["id"]] = row
    return by_id, salt, notes


def _generated_rows(generated: Mapping[str, Any] | None, salt: str, notes: list[str]) -> tuple[Mapping[str, Any], str]:
    """(id -> generated samples, the salt to judge with) of the generated view: its salt when it
    has rows and the observations report another `salt` (noted in `notes`)."""
    drawn: Mapping[str, Any] = {}
    if generated is not None:
        drawn = generated.get("rows", {}) if type(generated.get("rows")) is dict else {}
        if generated.get("salt") != salt and drawn:
            notes.append(
                "the observations report another salt than the generated samples; the generated view's is used"
            )
            salt = str(generated.get("salt", ""))
    return drawn, salt
