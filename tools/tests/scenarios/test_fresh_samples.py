"""Fresh samples defeat memorised answers; environment coupling shows as differing digests."""

from __future__ import annotations

from tools.testing.rowrun import calc, run_rows

BOUND = [
    {
        "id": "total_non_negative",
        "entry": "shop.calc:total",
        "kind": "bound",
        "min": 0,
        "max": 1_000_000,
        "blob": "oracles/blobs/b.json",
        "seed": 7,
    }
]
BOUND_BLOB = {"oracles/blobs/b.json": [{"a": 1, "b": 2}, {"a": 0, "b": 0}]}
GENERATE = {"count": 30, "a": {"int": [-1000, 1000]}, "b": {"int": [0, 1000]}}

# Right on every visible sample, memorised; wrong everywhere else.
MEMORISED = """
    KNOWN = {(1, 2): 3, (0, 0): 0}
    def total(a, b):
        return KNOWN.get((a, b), a - 2 * b)
"""


def with_generate(rows, spec):
    return [dict(row, generate=spec) for row in rows]


def run_generated(tmp_path, body, salt, name="run"):
    return run_rows(tmp_path / name, with_generate(BOUND, GENERATE), BOUND_BLOB, calc(body), salt=salt)


def test_memorised_answers_pass_the_visible_samples_only(tmp_path):
    visible = run_rows(tmp_path / "blob", BOUND, BOUND_BLOB, calc(MEMORISED))
    assert visible.judged["total_non_negative"].ok
    fresh = run_generated(tmp_path, MEMORISED, salt="4f1c")
    judged = fresh.judged["total_non_negative"]
    assert not judged.ok
    assert all(r.startswith("generated sample ") and "(salt 4f1c, 0-based)" in r for r in judged.reasons), (
        judged.reasons
    )


def test_the_same_salt_replays_the_same_samples_and_digest(tmp_path):
    honest = "def total(a, b):\n    return abs(a) + b\n"
    first = run_generated(tmp_path, honest, salt="replay", name="a")
    second = run_generated(tmp_path, honest, salt="replay", name="b")
    other = run_generated(tmp_path, honest, salt="another", name="c")
    assert first.judged["total_non_negative"].ok
    assert first.judged["total_non_negative"].digest == second.judged["total_non_negative"].digest
    assert first.judged["total_non_negative"].digest != other.judged["total_non_negative"].digest


def test_a_result_that_depends_on_the_time_zone_changes_the_digest(tmp_path):
    body = """
        import time
        def total(a, b):
            return abs(a) + b + time.localtime(0).tm_hour
    """
    utc = run_rows(tmp_path / "utc", BOUND, BOUND_BLOB, calc(body), env={"TZ": "UTC0"})
    other = run_rows(tmp_path / "npt", BOUND, BOUND_BLOB, calc(body), env={"TZ": "<+0545>-5:45"})
    assert utc.judged["total_non_negative"].ok and other.judged["total_non_negative"].ok
    assert utc.judged["total_non_negative"].digest != other.judged["total_non_negative"].digest
    assert utc.judged["total_non_negative"].sample_digests[0] != other.judged["total_non_negative"].sample_digests[0]


def test_a_result_that_reads_the_clock_changes_the_digest(tmp_path):
    body = """
        import time
        def total(a, b):
            return time.time_ns() % 1000
    """
    first = run_rows(tmp_path / "a", BOUND, BOUND_BLOB, calc(body))
    second = run_rows(tmp_path / "b", BOUND, BOUND_BLOB, calc(body))
    assert first.judged["total_non_negative"].digest != second.judged["total_non_negative"].digest


def test_a_deterministic_entry_has_the_same_digest_in_every_environment(tmp_path):
    body = "def total(a, b):\n    return abs(a) + b\n"
    utc = run_rows(tmp_path / "utc", BOUND, BOUND_BLOB, calc(body), env={"TZ": "UTC0", "PYTHONHASHSEED": "0"})
    other = run_rows(tmp_path / "npt", BOUND, BOUND_BLOB, calc(body), env={"TZ": "<+0545>-5:45", "PYTHONHASHSEED": "1"})
    assert utc.judged["total_non_negative"].digest == other.judged["total_non_negative"].digest


def test_a_result_that_depends_on_the_locale_changes_the_digest(tmp_path):
    body = """
        import locale
        def total(a, b):
            locale.setlocale(locale.LC_ALL, "")
            return abs(a) + b + (1 if "UTF" in (locale.getlocale()[1] or "") else 0)
    """
    utf8 = run_rows(tmp_path / "utf8", BOUND, BOUND_BLOB, calc(body), env={"LC_ALL": "C.UTF-8"})
    plain = run_rows(tmp_path / "c", BOUND, BOUND_BLOB, calc(body), env={"LC_ALL": "C"})
    assert utf8.judged["total_non_negative"].ok and plain.judged["total_non_negative"].ok
    assert utf8.judged["total_non_negative"].digest != plain.judged["total_non_negative"].digest
