"""Files the parsers cannot read for an invisible reason are named in words: byte order marks,
UTF-16/UTF-32, Latin-1, NUL and other control characters, lone carriage returns.

Each culprit is put into an oracle file, the policy and a blob, and the one-line message, path
included, is compared exactly. A property test checks that `text_problem` only explains: it never
names a problem in bytes tomllib or json would have accepted.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from collections.abc import Callable
from typing import NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tools.oracle_gate.approval.policy import parse_policy
from tools.oracle_gate.errors import INVALID_ORACLE, OracleError
from tools.oracle_gate.git.tree import REGULAR, Entry, GitTree
from tools.oracle_gate.spec.encoding import Language, text_problem
from tools.oracle_gate.spec.samples import SampleError, load_samples
from tools.oracle_gate.spec.schema import parse_oracle
from tools.oracle_gate.suite.loader import check_blob, load_oracles
from tools.testing.gitrepo import IDS, POLICY, TABLE_SAMPLES, blob_bytes, default_rows, junit, oracle_toml, sha256

ORACLE_PATH = "oracles/shop.toml"
BLOB_PATH = "oracles/blobs/table.json"


class Target(NamedTuple):
    """A file kind the gate parses: good bytes, how to get its problems, and their prefix."""

    language: str
    good: bytes
    problems: Callable[[bytes], list[str]]
    prefix: str


def _oracle_problems(data: bytes) -> list[str]:
    found = parse_oracle(data, ORACLE_PATH, ("shop",)).problems
    assert all(p.code == INVALID_ORACLE for p in found)
    return [str(p) for p in found]


def _policy_problems(data: bytes) -> list[str]:
    try:
        parse_policy(data)
    except OracleError as exc:
        assert exc.code == INVALID_ORACLE
        return [str(exc)]
    return []


def _blob_problems(data: bytes) -> list[str]:
    table = parse_oracle(oracle_toml(default_rows()).encode(), ORACLE_PATH, ("shop",)).invariants[2]
    pinned = dataclasses.replace(table, blob_sha256=sha256(data))
    found = check_blob(pinned, Entry(REGULAR, "0" * 40), data)
    assert all(p.code == INVALID_ORACLE for p in found)
    return [str(p) for p in found]


TARGETS = {
    "oracle": Target("TOML", oracle_toml(default_rows()).encode(), _oracle_problems, f"{ORACLE_PATH}: "),
    "policy": Target("TOML", POLICY.encode(), _policy_problems, "oracles/policy.toml: "),
    "blob": Target(
        "JSON", blob_bytes(TABLE_SAMPLES), _blob_problems, f"{ORACLE_PATH}: row add_table: field blob: {BLOB_PATH} "
    ),
}


def _recode(codec: str, mark: bytes = b"") -> Callable[[bytes], bytes]:
    return lambda good: mark + good.decode("utf-8").encode(codec)


def _second_line(culprit: bytes) -> Callable[[bytes], bytes]:
    """Puts `culprit` at line 2 after a blank first line (blank lines are valid TOML and JSON)."""
    return lambda good: b"\n" + culprit + good


SAVE_AS = "save it as UTF-8 without BOM"
LATIN = "so the file was probably saved in that encoding; save it as UTF-8"
CONTROL = "which {language} does not allow; delete it, or write it as \\u{code} inside a string"
# (id, how the good bytes are spoiled, TOML message, JSON message); a message of None means the
# bytes are still valid in that language, and "{language}" is filled in.
CULPRITS = [
    (
        "utf8_bom",
        lambda good: b"\xef\xbb\xbf" + good,
        "starts with a UTF-8 byte order mark (EF BB BF); save the file as UTF-8 without BOM",
        "=",
    ),
    (
        "utf16le_bom",
        _recode("utf-16-le", b"\xff\xfe"),
        f"starts with a UTF-16LE byte order mark (FF FE): the file is saved as UTF-16LE, not UTF-8; {SAVE_AS}",
        "=",
    ),
    (
        "utf16be_bom",
        _recode("utf-16-be", b"\xfe\xff"),
        f"starts with a UTF-16BE byte order mark (FE FF): the file is saved as UTF-16BE, not UTF-8; {SAVE_AS}",
        "=",
    ),
    (
        "utf32le_bom",
        _recode("utf-32-le", b"\xff\xfe\x00\x00"),
        f"starts with a UTF-32LE byte order mark (FF FE 00 00): the file is saved as UTF-32LE, not UTF-8; {SAVE_AS}",
        "=",
    ),
    (
        "utf32be_bom",
        _recode("utf-32-be", b"\x00\x00\xfe\xff"),
        f"starts with a UTF-32BE byte order mark (00 00 FE FF): the file is saved as UTF-32BE, not UTF-8; {SAVE_AS}",
        "=",
    ),
    (
        "utf16le",
        _recode("utf-16-le"),
        "looks like UTF-16LE without a byte order mark (every other byte is 00), not UTF-8; save the file as UTF-8",
        "=",
    ),
    (
        "utf16be",
        _recode("utf-16-be"),
        "looks like UTF-16BE without a byte order mark (every other byte is 00), not UTF-8; save the file as UTF-8",
        "=",
    ),
    (
        "utf32le",
        _recode("utf-32-le"),
        "looks like UTF-32LE without a byte order mark (three of every four bytes are 00), not UTF-8; "
        "save the file as UTF-8",
        "=",
    ),
    (
        "nul",
        _second_line(b"\x00"),
        "has a NUL byte (U+0000) at line 2, column 1 (byte offset 1), which {language} does not allow; "
        "delete it (a file with many NULs was saved as UTF-16 or is not text)",
        "=",
    ),
    (
        "latin1",
        _second_line(b" \xe9"),
        f"is not UTF-8: byte 0xE9 at line 2, column 2 (byte offset 2) is 'é' in Latin-1/Windows-1252, {LATIN}",
        "=",
    ),
    (
        "windows1252",
        _second_line(b" \x93"),
        f"is not UTF-8: byte 0x93 at line 2, column 2 (byte offset 2) is '\u201c' in Latin-1/Windows-1252, {LATIN}",
        "=",
    ),
    (
        "undefined_byte",
        _second_line(b" \x81"),
        "is not UTF-8: byte 0x81 at line 2, column 2 (byte offset 2) cannot "
        "occur there in UTF-8; save the file as UTF-8",
        "=",
    ),
    (
        "surrogate",
        _second_line(b"\xed\xa0\x80"),
        "is not UTF-8: bytes ED A0 80 at line 2, column 1 (byte offset 1) encode the lone surrogate U+D800, which "
        "UTF-8 does not allow; save the file as UTF-8",
        "=",
    ),
    (
        "lone_cr",
        _second_line(b"\r"),
        "has a carriage return (U+000D) not followed by a line feed at line 2, column 1, which TOML does not allow; "
        "save the file with LF (or CRLF) line endings",
        None,
    ),  # JSON: a CR is whitespace
    (
        "escape",
        _second_line(b"\x1b"),
        "has the control character U+001B (escape) at line 2, column 1, " + CONTROL.replace("{code}", "001b"),
        "=",
    ),
    (
        "form_feed",
        _second_line(b"\x0c"),
        "has the control character U+000C (form feed) at line 2, column 1, " + CONTROL.replace("{code}", "000c"),
        "=",
    ),
    (
        "start_of_heading",
        _second_line(b"\x01"),
        "has the control character U+0001 at line 2, column 1, " + CONTROL.replace("{code}", "0001"),
        "=",
    ),
    # JSON allows DEL, so json reports what follows; TOML forbids it.
    (
        "delete",
        _second_line(b"\x7f"),
        "has the control character U+007F (delete) at line 2, column 1, " + CONTROL.replace("{code}", "007f"),
        "is not valid JSON: Expecting value at line 2 column 1",
    ),
    ("crlf", lambda good: good.replace(b"\n", b"\r\n"), None, None),
    ("tab", _second_line(b"\t"), None, None),
]


def _expected(target: Target, toml_message: str | None, json_message: str | None) -> list[str]:
    message = toml_message if target.language == "TOML" or json_message == "=" else json_message
    return [] if message is None else [target.prefix + message.format(language=target.language)]


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize(
    ("spoil", "toml_message", "json_message"), [c[1:] for c in CULPRITS], ids=[c[0] for c in CULPRITS]
)
def test_each_culprit_is_named_with_its_file(target, spoil, toml_message, json_message):
    chosen = TARGETS[target]
    assert chosen.problems(chosen.good) == []
    assert chosen.problems(spoil(chosen.good)) == _expected(chosen, toml_message, json_message)


@pytest.mark.parametrize("culprit", CULPRITS, ids=[c[0] for c in CULPRITS])
def test_messages_are_one_printable_line(culprit):
    languages: tuple[Language, ...] = ("TOML", "JSON")
    for language in languages:
        message = text_problem(culprit[1](b'{"a": 1}\n'), language)
        assert message is None or message.isprintable()


def test_a_reply_with_a_bom_is_named_too():
    with pytest.raises(SampleError, match=r"^starts with a UTF-8 byte order mark \(EF BB BF\)"):
        load_samples(b"\xef\xbb\xbf[]")


def test_the_first_culprit_in_the_file_is_named():
    assert text_problem(b'a = "\x1b"\nb = "caf\xe9"\n', "TOML") == (
        "has the control character U+001B (escape) at line 1, column 6, which TOML does not allow; "
        "delete it, or write it as \\u001b inside a string"
    )
    assert text_problem(b'a = "caf\xe9"\nb = "\x1b"\n', "TOML").startswith(
        "is not UTF-8: byte 0xE9 at line 1, column 9"
    )


def test_columns_count_characters_not_bytes():
    assert text_problem('x = "ü"\0'.encode(), "TOML") == (
        "has a NUL byte (U+0000) at line 1, column 8 (byte offset 8), which TOML does not allow; "
        "delete it (a file with many NULs was saved as UTF-16 or is not text)"
    )


# The loader on real commits: the path in the message is the file's own.


def _head_problems(repo) -> list[str]:
    tree = GitTree(str(repo.path), repo.git("rev-parse", "HEAD").strip())
    return [str(p) for p in load_oracles(tree).problems]


def test_loader_names_a_bom_in_an_oracle_file(project):
    project.write(ORACLE_PATH, b"\xef\xbb\xbf" + project.read(ORACLE_PATH))
    project.commit("saved with a BOM")
    assert _head_problems(project) == [
        "oracles/shop.toml: starts with a UTF-8 byte order mark (EF BB BF); save the file as UTF-8 without BOM"
    ]


def test_loader_names_a_latin1_oracle_file(project):
    text = "# Prüfung der Summe\n" + project.read(ORACLE_PATH).decode()
    project.write(ORACLE_PATH, text.encode("latin-1"))
    project.commit("saved as Latin-1")
    assert _head_problems(project) == [
        "oracles/shop.toml: is not UTF-8: byte 0xFC at line 1, column 5 (byte offset 4) is 'ü' in "
        "Latin-1/Windows-1252, so the file was probably saved in that encoding; save it as UTF-8"
    ]


def test_loader_names_a_utf16_policy(project):
    project.write("oracles/policy.toml", b"\xff\xfe" + POLICY.encode("utf-16-le"))
    project.commit("policy saved as UTF-16")
    assert (
        "oracles/policy.toml: starts with a UTF-16LE byte order mark (FF FE): the file is saved as UTF-16LE, "
        "not UTF-8; save it as UTF-8 without BOM" in _head_problems(project)
    )


def test_loader_names_a_nul_in_a_blob(project):
    data = blob_bytes(TABLE_SAMPLES)
    data = data.replace(b"\n", b"\n\x00", 1)
    rows = default_rows()
    rows[2]["blob_sha256"] = sha256(data)
    project.write(BLOB_PATH, data)
    project.write(ORACLE_PATH, oracle_toml(rows))
    project.commit("blob with a NUL")
    assert _head_problems(project) == [
        "oracles/shop.toml: row add_table: field blob: oracles/blobs/table.json has a NUL byte (U+0000) at "
        "line 2, column 1 (byte offset 2), which JSON does not allow; delete it (a file with many NULs was "
        "saved as UTF-16 or is not text)"
    ]


def test_check_reports_a_bom_as_an_invalid_oracle(gate, project, tmp_path):
    project.write(ORACLE_PATH, b"\xef\xbb\xbf" + project.read(ORACLE_PATH))
    project.write_manifest()
    project.commit("saved with a BOM")
    code, out, _ = gate(
        "--repo",
        str(project.path),
        "check",
        "--base",
        "main",
        "--label",
        "oracle-change",
        "--results",
        junit(tmp_path, {i: "passed" for i in IDS}),
    )
    assert code == INVALID_ORACLE, out
    assert (
        "[5] oracles/shop.toml: starts with a UTF-8 byte order mark (EF BB BF); save the file as UTF-8 without BOM"
    ) in out.splitlines()


# text_problem only explains what the parsers refuse anyway.

FUZZ = settings(
    derandomize=True, database=None, deadline=None, max_examples=500, suppress_health_check=[HealthCheck.too_slow]
)
CULPRIT_BYTES = [
    b"\xef\xbb\xbf",
    b"\xff\xfe",
    b"\xfe\xff",
    b"\x00",
    b"\r",
    b"\r\n",
    b"\n",
    b"\t",
    b"\x1b",
    b"\x7f",
    b"\xe9",
    b"\xed\xa0\x80",
    b"\xc3\xa9",
    b'"',
    b"#",
    b"a = 1",
    b"[1, 2]",
    b" ",
    b"{}",
    b"\x0c",
]
spoiled = st.lists(st.sampled_from(CULPRIT_BYTES), max_size=12).map(b"".join) | st.binary(max_size=64)


def _toml_accepts(data: bytes) -> bool:
    try:
        tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return True


def _json_accepts(data: bytes) -> bool:
    try:
        json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    return True


@FUZZ
@given(spoiled)
def test_a_named_problem_is_one_the_parser_refuses_anyway(data):
    parsers: tuple[tuple[Language, Callable[[bytes], bool]], ...] = (("TOML", _toml_accepts), ("JSON", _json_accepts))
    for language, accepts in parsers:
        message = text_problem(data, language)
        if message is None:
            data.decode("utf-8")
        else:
            assert not accepts(data), (language, data, message)
            assert message.isprintable()


@pytest.mark.parametrize(
    ("char", "name"),
    [
        ("\u00a0", "no-break space"),
        ("\u2028", "line separator"),
        ("\ufeff", "zero-width no-break space (a byte order mark inside the file)"),
        ("\u200b", "zero-width space"),
    ],
)
def test_an_invisible_character_the_parser_refuses_is_named(char, name):
    data = f'schema = 1\n\n[[invariant]]\nid ={char}"x"\n'.encode()
    problems = [str(p) for p in parse_oracle(data, "oracles/x.toml").problems]
    assert len(problems) == 1 and problems[0].startswith("oracles/x.toml: is not valid TOML: ")
    assert problems[0].endswith(
        f"; line 4, column 5 holds U+{ord(char):04X} ({name}), which looks like a space or "
        "nothing but is not whitespace to TOML; retype it"
    )
