"""Boundary samples of a row: the edges of its generators, one field at a time, for `record`
(docs/oracles.md, "Recording expected values").

From a first drawn sample, each top-level generated field in turn takes each of its edge values
while the other fields keep theirs: an `int` its bounds and 0, -1 and 1; a `float` its bounds and
0.0, -1.0 and 1.0; a `string` the empty string and one character past its longest length; a
`list` the empty list and one item past its longest length; each value of a `choice`; `null` for
an `optional`; each piece of a `string` alone; the edges of every option of a `one_of`. Values
outside a generator's range are meant: the approved code's answer there
(often an exception) is part of what is recorded. Objects, tuples and sets keep their drawn value.
Pure: standard library and the generators only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tools.oracle_gate.spec.generate import (
    ChoiceGen,
    FloatGen,
    Gen,
    GenerateSpec,
    IntGen,
    ListGen,
    OneOfGen,
    OptionalGen,
    StringGen,
)

# The small numbers every numeric field is also tried with (the issue of "off by one" and of sign).
SMALL_INTS = (0, -1, 1)
SMALL_FLOATS = (0.0, -1.0, 1.0)


def edges(gen: Gen, drawn: Any) -> list[Any]:
    """The edge values of one generator, in a fixed order without repeats; `drawn` is the value the
    first drawn sample holds for it (a list's items are taken from it). Raises nothing."""
    values: list[Any] = []
    if isinstance(gen, IntGen):
        values = [gen.lo, gen.hi, *SMALL_INTS]
    elif isinstance(gen, FloatGen):
        values = [gen.lo, gen.hi, *SMALL_FLOATS]
    elif isinstance(gen, StringGen):
        values = ["", gen.alphabet[0] * (gen.max_len + 1), *gen.pieces]
    elif isinstance(gen, ListGen):
        values = [[]]
        if type(drawn) is list and drawn:
            values.append([drawn[i % len(drawn)] for i in range(gen.max_len + 1)])
    elif isinstance(gen, ChoiceGen):
        values = [json.loads(text) for text in gen.values]
    elif isinstance(gen, OptionalGen):
        values = [None, *edges(gen.item, drawn)]
    elif isinstance(gen, OneOfGen):
        values = [value for option in gen.options for value in edges(option, drawn)]
    seen: set[str] = set()
    out = []
    for value in values:
        key = json.dumps(value, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(value)
    return out


def boundary_samples(spec: GenerateSpec, first: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The boundary samples of a row whose `generate` table is `spec`, from its first drawn sample
    `first` (the shape `generate.draw` gives: for a `packed` spec `{"args": [...]}` and maybe a
    `receiver`), in that same shape: one per field and edge value, fields in `spec.fields` order.
    Raises nothing."""
    fields = _unpacked(spec.packed, first)
    out = []
    for name, gen in spec.fields:
        for value in edges(gen, fields.get(name)):
            if fields.get(name) != value or type(fields.get(name)) is not type(value):
                out.append(_packed(spec.packed, {**fields, name: value}))
    return out


def _unpacked(packed: Sequence[str], sample: Mapping[str, Any]) -> dict[str, Any]:
    """A drawn sample as field -> value (a packed one's `args` spread over the `packed` names)."""
    if not packed:
        return dict(sample)
    fields = dict(zip(packed, sample["args"], strict=True))
    if "receiver" in sample:
        fields["receiver"] = sample["receiver"]
    return fields


def _packed(packed: Sequence[str], fields: Mapping[str, Any]) -> dict[str, Any]:
    """field -> value back in the drawn shape (`generate.draw`)."""
    if not packed:
        return dict(fields)
    out: dict[str, Any] = {"args": [fields[name] for name in packed]}
    if "receiver" in fields:
        out["receiver"] = fields["receiver"]
    return out
