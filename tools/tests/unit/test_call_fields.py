"""Schema checks of the fields that reach methods, references and relations: one line, exit 5,
naming file, row and field."""

from __future__ import annotations

import pytest

from tools.oracle_gate.spec.schema import parse_oracle

HEAD = 'schema = 1\n[[invariant]]\nid = "r"\nblob = "oracles/blobs/t.json"\nblob_sha256 = "' + "a" * 64 + '"\n'


def problems(body: str) -> list[tuple[str | None, str]]:
    found = parse_oracle((HEAD + body).encode(), "oracles/x.toml", ["shop"]).problems
    assert all(p.code == 5 and p.path == "oracles/x.toml" and p.row == "r" for p in found)
    return [(p.field, str(p).split(": ", 3)[-1]) for p in found]


def test_each_builds_the_items_of_an_array_with_a_container_or_a_production_builder():
    body = 'entry = "shop.v:f"\nkind = "bound"\nmin = 0\nmax = 1\n'
    assert problems(body + 'build = { x = "each:builtins:tuple", y = "each:each:shop.v:P" }\n') == []


def test_a_method_row_with_receiver_build_and_projection_is_valid():
    assert (
        problems(
            'entry = "shop.v:Version.compare"\nkind = "bound"\nmin = -1\nmax = 1\n'
            'receiver = "shop.v:Version.parse"\nbuild = { other = "shop.v:Version.parse" }\nproject = "int"\n'
        )
        == []
    )


@pytest.mark.parametrize(
    ("body", "field", "text"),
    [
        (
            'entry = "shop.v:f"\nkind = "bound"\nmin = 0\nmax = 1\nreceiver = "shop.v:V"\n',
            "receiver",
            "needs a method entry",
        ),
        (
            'entry = "shop.v:V.f"\nkind = "bound"\nmin = 0\nmax = 1\nreceiver = "os.path:join"\n',
            "receiver",
            "outside the production packages",
        ),
        ('entry = "shop.v:A.B.c"\nkind = "bound"\nmin = 0\nmax = 1\n', "entry", "is not of the form"),
        ('entry = "shop.v:f"\nkind = "exact_table"\nbuild = { x = "shop.v:g" }\n', "build.x", "not in args_names"),
        (
            'entry = "shop.v:f"\nkind = "bound"\nmin = 0\nmax = 1\n'
            'build = { x = "each:each:each:each:each:builtins:tuple" }\n',
            "build.x",
            "nests 5 `each:` builders; at most 4",
        ),
        (
            'entry = "shop.v:f"\nkind = "bound"\nmin = 0\nmax = 1\nbuild = { x = "each:os.path:join" }\n',
            "build.x",
            "outside the production packages",
        ),
        ('entry = "shop.v:f"\nkind = "exact_table"\ngenerate = { count = 1 }\n', "generate", "without a reference"),
        (
            'entry = "shop.v:f"\nkind = "exact_table"\nreference = '
            '"oracles.reference.m:f"\ngenerate = { count = 1, a = { int = [0, 1] } '
            "}\n",
            "args_names",
            "is required when an exact_table row generates",
        ),
        (
            'entry = "shop.v:f"\nkind = "exact_table"\nreference = "shop.v:f"\n',
            "reference",
            "not a function of a package under oracles/reference/",
        ),
        (
            'entry = "shop.v:f"\nkind = "bound"\nmin = 0\nmax = 1\nproject = "repr"\n',
            "project",
            "unknown projection 'repr'",
        ),
        (
            'entry = "shop.v:f"\nkind = "bound"\nmin = 0\nmax = 1\nproject = { attrs = [] }\n',
            "project.attrs",
            "non-empty",
        ),
        ('entry = "shop.v:f"\nkind = "matches"\npattern = "(["\n', "pattern", "is not a Python regular expression"),
        ('entry = "shop.v:f"\nkind = "matches"\n', "pattern", "is required for kind 'matches'"),
        (
            'entry = "shop.v:f"\nkind = "agrees"\nreference = "oracles.reference.m:f"\n',
            "generate",
            "is required for kind 'agrees'",
        ),
        ('entry = "shop.v:f"\nkind = "antisymmetric"\nargs_names = ["a"]\n', "args_names", "exactly two"),
        ('entry = "shop.v:f"\nkind = "monotonic"\nover = "x"\ndirection = "up"\n', "direction", "must be one of"),
        (
            'entry = "shop.v:f"\nkind = "monotonic"\nover = "x"\ndirection = '
            '"non_decreasing"\ngenerate = { count = 1, x = { int = [0, 1] } }\n',
            "generate.x",
            "must be a list generator of at least two items",
        ),
        ('kind = "composed"\nentries = ["shop.v:f", "shop.v:g"]\n', "kind", "either min and max or a reference"),
        (
            'entry = "shop.v:f"\nkind = "composed"\nentries = ["shop.v:f", "shop.v:g"]\nmin = 0\nmax = 1\n',
            "entry",
            "not allowed for kind 'composed'",
        ),
        ('kind = "composed"\nentries = ["shop.v:f"]\nmin = 0\nmax = 1\n', "entries", "2 to 16"),
        ('entry = "shop.v:f"\nkind = "round_trip"\n', "inverse", "is required for kind 'round_trip'"),
        (
            'entry = "shop.v:f"\nkind = "idempotent"\nargs = []\nrepeat = 2\nproject = "str"\n',
            "project",
            "not allowed for kind 'idempotent'",
        ),
        (
            'entry = "shop.v:f"\nkind = "bound"\nmin = 0\nmax = 1\npattern = "x"\n',
            "pattern",
            "is not allowed for kind 'bound'",
        ),
        (
            'entry = "shop.v:f"\nkind = "bound"\nmin = 0\nmax = 1\nrecevier = "shop.v:V"\n',
            "recevier",
            "unknown key 'recevier'",
        ),
    ],
)
def test_bad_fields_are_named(body, field, text):
    found = problems(body)
    assert any(f == field and text in message for f, message in found), found
