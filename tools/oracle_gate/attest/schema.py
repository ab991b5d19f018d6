"""The shape of the two statement lines, as JSON Schema (draft 2020-12 keywords: `type`,
`properties`, `required`, `additionalProperties`, `items`, `const`, `enum`, `pattern`), and the
validator `verify` checks them with, which knows those keywords and no other
(docs/design.md section 14). Every object is closed: a field the gate does not write is refused."""

from __future__ import annotations

import re
from typing import Any

_COMMIT = {"type": "string", "pattern": "^([0-9a-f]{40}|[0-9a-f]{64})$"}
_COMMIT_OR_EMPTY = {"type": "string", "pattern": "^([0-9a-f]{40}|[0-9a-f]{64})?$"}
_SHA256 = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
_TIME = {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"}
_VERDICT = {"enum": ["PASSED", "FAILED"]}


def _closed(required: dict[str, Any]) -> dict[str, Any]:
    """An object schema with exactly the properties `required`, each required."""
    return {"type": "object", "properties": required, "required": sorted(required), "additionalProperties": False}


def _map_of(value: dict[str, Any]) -> dict[str, Any]:
    """An object whose every value has the schema `value`."""
    return {"type": "object", "additionalProperties": value}


_VERIFIER = _closed(
    {
        "id": {"const": "urn:oracle-gate:check"},
        "version": _closed(
            {
                "oracle-gate": {"type": "string", "pattern": "^[0-9]+\\.[0-9]+\\.[0-9]+$"},
                "oracle-gate-sources": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
            }
        ),
    }
)
_SUBJECT = {
    "type": "array",
    "prefixItems": [
        _closed({"name": {"type": "string"}, "digest": _closed({"gitCommit": _COMMIT})}),
        _closed({"name": {"type": "string"}, "digest": _closed({"gitTree": _COMMIT})}),
    ],
    "minItems": 2,
    "maxItems": 2,
}
_RUN = _map_of(
    _closed(
        {
            "outcome": {"enum": ["passed", "failed", "error", "skipped", "missing"]},
            "digest": {"type": "string", "pattern": "^([0-9a-f]{64})?$"},
        }
    )
)


def _statement(predicate_type: str, predicate: dict[str, Any]) -> dict[str, Any]:
    """An in-toto Statement v1 with the given predicate type and predicate schema."""
    return _closed(
        {
            "_type": {"const": "https://in-toto.io/Statement/v1"},
            "subject": _SUBJECT,
            "predicateType": {"const": predicate_type},
            "predicate": predicate,
        }
    )


# Line 1: the SLSA Verification Summary Attestation v1.
VSA_SCHEMA = _statement(
    "https://slsa.dev/verification_summary/v1",
    _closed(
        {
            "verifier": _VERIFIER,
            "timeVerified": _TIME,
            "resourceUri": {"type": "string", "pattern": "^git\\+.+@([0-9a-f]{40}|[0-9a-f]{64})$"},
            "policy": _closed(
                {
                    "uri": {"type": "string"},
                    "digest": _closed({"gitTree": _COMMIT}),
                    "annotations": _closed(
                        {"claimsCommit": _COMMIT, "policy": _COMMIT_OR_EMPTY, "manifest": _COMMIT_OR_EMPTY}
                    ),
                }
            ),
            "inputAttestations": {
                "type": "array",
                "prefixItems": [_closed({"name": {"const": "per-id results"}, "digest": _closed({"sha256": _SHA256})})],
                "minItems": 1,
                "maxItems": 1,
            },
            "verificationResult": _VERDICT,
            "verifiedLevels": {
                "type": "array",
                "items": {"enum": ["ORACLE_GATE_CLAIMS_HELD", "FAILED"]},
                "minItems": 1,
                "maxItems": 1,
            },
            "slsaVersion": {"const": "1.0"},
        }
    ),
)
# Line 2: the per-id results.
RESULTS_SCHEMA = _statement(
    "urn:oracle-gate:check-results:v1",
    _closed(
        {
            "verifier": _VERIFIER,
            "timeVerified": _TIME,
            "verificationResult": _VERDICT,
            "exitCode": {"enum": [0, 1, 2, 3, 4, 5, 6]},
            "base": {"type": "string"},
            "baseTip": _COMMIT,
            "mergeBase": _COMMIT,
            "head": _COMMIT,
            "judged": _COMMIT,
            "claims": _COMMIT,
            "salt": {"type": "string", "pattern": "^[A-Za-z0-9_.-]{0,64}$"},
            "checks": {
                "type": "array",
                "items": _closed({"name": {"type": "string"}, "status": {"enum": ["ok", "FAIL", "NOT RUN"]}}),
            },
            "violations": {
                "type": "array",
                "items": _closed(
                    {"code": {"enum": [1, 2, 3, 4, 5, 6]}, "path": {"type": "string"}, "id": {"type": "string"}}
                ),
            },
            "runs": _closed({"workspace": _RUN, "clean": {"anyOf": [{"type": "null"}, _RUN]}}),
            "hidden": _map_of({"enum": ["passed", "failed", "clean-run-only", "not-run"]}),
            "approvals": {
                "type": "array",
                "items": _closed({"label": {"type": "string"}, "commit": _COMMIT}),
            },
        }
    ),
)

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "null": (type(None),),
    "boolean": (bool,),
    "integer": (int,),
}


def schema_problem(value: Any, schema: dict[str, Any], where: str = "$") -> str | None:
    """The first place where `value` (parsed JSON) does not have the shape `schema`, as
    `<JSON path>: <why>`, or None when it has it. Knows the keywords of the module docstring plus
    `prefixItems`, `minItems`, `maxItems` and `anyOf`; a bool is never an integer. Raises nothing."""
    if "anyOf" in schema:
        if all(schema_problem(value, option, where) for option in schema["anyOf"]):
            return f"{where}: matches none of its allowed shapes"
        return None
    if "const" in schema and not _same(value, schema["const"]):
        return f"{where}: must be {schema['const']!r}"
    if "enum" in schema and not any(_same(value, option) for option in schema["enum"]):
        return f"{where}: must be one of {', '.join(map(repr, schema['enum']))}"
    kind = schema.get("type")
    if kind is not None and (not isinstance(value, _TYPES[kind]) or (kind == "integer" and type(value) is bool)):
        return f"{where}: must be of type {kind}"
    if "pattern" in schema and (not isinstance(value, str) or not re.search(schema["pattern"], value)):
        return f"{where}: {value!r} does not match {schema['pattern']}"
    if isinstance(value, dict):
        return _object_problem(value, schema, where)
    if isinstance(value, list):
        return _array_problem(value, schema, where)
    return None


def _same(a: Any, b: Any) -> bool:
    """JSON equality: same type (a bool is not an int) and same value."""
    return type(a) is type(b) and a == b


def _object_problem(value: dict[str, Any], schema: dict[str, Any], where: str) -> str | None:
    """`schema_problem` for the object keywords."""
    for key in schema.get("required", ()):
        if key not in value:
            return f"{where}: lacks {key!r}"
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in properties:
            found = schema_problem(item, properties[key], f"{where}.{key}")
        elif extra is False:
            found = f"{where}: has {key!r}, which the statement does not have"
        elif isinstance(extra, dict):
            found = schema_problem(item, extra, f"{where}.{key}")
        else:
            found = None
        if found:
            return found
    return None


def _array_problem(value: list[Any], schema: dict[str, Any], where: str) -> str | None:
    """`schema_problem` for the array keywords."""
    if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", len(value)):
        return f"{where}: has {len(value)} item(s)"
    prefix = schema.get("prefixItems", [])
    for index, item in enumerate(value):
        item_schema = prefix[index] if index < len(prefix) else schema.get("items")
        found = schema_problem(item, item_schema, f"{where}[{index}]") if item_schema is not None else None
        if found:
            return found
    return None
