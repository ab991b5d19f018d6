"""The caller: imports production entries and calls them on the inputs it is sent.

Started by `observe.py` (the supervisor) as `python3 caller.py IN_FD OUT_FD`. It reads one request
per line from IN_FD and writes one reply per line to OUT_FD; stdin is /dev/null and stdout/stderr
go to the caller log, so nothing production code prints can reach the channel by accident.

A request holds a row's inputs only (docs/design.md section 8):

    {"id": ID, "entry": "pkg.mod:fn", "kind": KIND, "seed": INT, "args": [NAME...], "repeat": N,
     "samples": [...]}

with samples `{kw: value}` (bound), `{"state": S, "kwargs": {...}}` (idempotent) or `[arg, ...]`
(exact_table). The reply is `{"id": ID, "results": [R, ...]}`, one R per sample, or
`{"id": ID, "error": "..."}` when the entry cannot be loaded. R is `{"value": V}` (for idempotent,
V is the list of states after each call), `{"raised": "Type: message"}` or `{"unplain": "why"}`.

Nothing the caller writes is trusted: production code shares this process and may rewrite it.
The judge parses every reply strictly and decides; this module only has to be correct for honest
production code, and to survive the usual ways a result can misbehave (subclasses, custom `__eq__`,
objects mutated after they are returned: each result is encoded as soon as it is returned, and
each call gets a fresh copy of its inputs).

Standard library only; this file must not import the gate package.
"""

import os, sys; sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != os.path.dirname(os.path.realpath(__file__))]  # noqa: E401,E702 - see actions/__init__.py

import importlib
import json
import math
import random
from typing import Any

# Captured before any production module is imported: production code may rebind the builtins,
# `json` or `math` afterwards, and the caller should keep working for honest code that does not.
_type = type
_str = str
_int = int
_float = float
_bool = bool
_list = list
_dict = dict
_len = len
_sorted = sorted
_isfinite = math.isfinite
_int_repr = int.__repr__
_float_repr = float.__repr__
_join = str.join
_loads = json.loads
_dumps = json.dumps
_encode_string = json.encoder.encode_basestring_ascii
_os_read = os.read
_os_write = os.write
_BaseException = BaseException
_MemoryError = MemoryError
_OSError = OSError
# Linux errno values: EMFILE, open(2) refused at RLIMIT_NOFILE; EFBIG, write(2) past RLIMIT_FSIZE
# (CPython ignores SIGXFSZ, so the write fails).
_EMFILE, _EFBIG = 24, 27
_import_module = importlib.import_module
_getattr = getattr
_callable = callable
_seed = random.seed

MAX_DEPTH = 100
MAX_REPLY_BYTES = 64 << 20  # the supervisor refuses longer replies


class NotPlain(Exception):
    """A result is not a plain JSON-typed value; the message says where and why."""


def encode(value: Any, where: str = "result", depth: int = 0) -> str:
    """Encodes a plain JSON-typed value as compact JSON text with sorted keys.

    Exact types only (no subclasses): int, float (finite), str, bool, None, list, dict with str keys.

    Raises:
        NotPlain: naming the first offending position.
    """
    kind = _type(value)
    if depth > MAX_DEPTH:
        raise NotPlain(f"{where} nests deeper than {MAX_DEPTH} levels")
    if value is None:
        return "null"
    if kind is _bool:
        return "true" if value else "false"
    if kind is _int:
        try:
            return _int_repr(value)
        except ValueError:
            raise NotPlain(f"{where} is an integer too long to convert to text") from None
    if kind is _float:
        if not _isfinite(value):
            raise NotPlain(f"{where} is {_float_repr(value)}, not a finite number")
        return _float_repr(value)
    if kind is _str:
        return _encode_string(value)
    if kind is _list:
        parts = [encode(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value)]
        return "[" + _join(",", parts) + "]"
    if kind is _dict:
        keys = _list(value.keys())
        for key in keys:
            if _type(key) is not _str:
                raise NotPlain(f"{where} has a non-string key of type {_type(key).__name__}")
        parts = [_encode_string(k) + ":" + encode(value[k], f"{where}[{k!r}]", depth + 1) for k in _sorted(keys)]
        return "{" + _join(",", parts) + "}"
    raise NotPlain(f"{where} is a {kind.__module__}.{kind.__qualname__}, not a plain JSON-typed value")


def _limit_hit(exc: BaseException) -> str | None:
    """The limit an exception shows was reached (docs/design.md section 8, "Limits"), or None:
    MemoryError at the address-space limit, a refused open at the open-file limit, a refused write
    at the file size limit. The supervisor passes the limits in the environment it starts this
    process with."""
    if _type(exc) is _MemoryError:
        return f"exceeded the memory limit of {os.environ.get('ORACLE_GATE_MEMORY_MIB', '?')} MiB (memory_mib)"
    limit = os.environ.get
    if isinstance(exc, _OSError) and exc.errno == _EMFILE:
        return f"could not open a file: the open-file limit of {limit('ORACLE_GATE_OPEN_FILES_LIMIT', '?')}"
    if isinstance(exc, _OSError) and exc.errno == _EFBIG:
        return f"wrote a file past the file size limit of {limit('ORACLE_GATE_FILE_SIZE_LIMIT', '?')} bytes"
    return None


def _raised(exc: BaseException) -> dict[str, str]:
    text = f"{_type(exc).__name__}: {exc}"
    return {"raised": text[:500]}


def _copy(value: object) -> object:
    """A fresh copy of a plain value (inputs are plain: they come from strict JSON)."""
    return _loads(encode(value, "input"))


def call_row(request: dict[str, object]) -> str:
    """Runs one row and returns its reply as one line of JSON text (without the newline)."""
    ident = request.get("id")
    try:
        module_name, _, function_name = _str(request["entry"]).partition(":")
        module = _import_module(module_name)
        fn = _getattr(module, function_name)
        if not _callable(fn):
            raise TypeError(f"{request['entry']} is not callable")
    except _BaseException as exc:  # noqa: BLE001 - any failure to load is this row's error
        return _dumps({"id": ident, "error": f"cannot load entry {request.get('entry')}: {_raised(exc)['raised']}"})
    seed = request.get("seed")
    _seed(seed if _type(seed) is _int else 0)
    kind = request["kind"]
    results: list[str] = []
    for sample in request["samples"]:  # type: ignore[attr-defined]
        try:
            if kind == "bound":
                results.append('{"value":' + encode(fn(**_copy(sample))) + "}")  # type: ignore[arg-type]
            elif kind == "exact_table":
                results.append('{"value":' + encode(fn(*_copy(sample))) + "}")  # type: ignore[misc]
            elif kind == "idempotent":
                state_text = encode(sample["state"], "state")
                kwargs = sample["kwargs"]
                states = []
                for number in range(request["repeat"]):  # type: ignore[call-overload]
                    returned = fn(_loads(state_text), **_copy(kwargs))  # type: ignore[arg-type]
                    state_text = encode(returned, f"state after call {number + 1}")
                    states.append(state_text)
                results.append('{"value":[' + _join(",", states) + "]}")
            else:
                results.append(_dumps({"raised": f"unknown kind {kind!r}"}))
        except NotPlain as exc:
            results.append(_dumps({"unplain": _str(exc)}))
        except _BaseException as exc:  # noqa: BLE001 - production raising is a failed sample
            limit = _limit_hit(exc)
            if limit is not None:  # the row fails, naming the limit
                return _dumps({"id": ident, "error": limit})
            results.append(_dumps(_raised(exc)))
    return '{"id":' + _dumps(ident) + ',"results":[' + _join(",", results) + "]}"


def _read_lines(fd: int):  # type: ignore[no-untyped-def]
    buffer = b""
    while True:
        chunk = _os_read(fd, 1 << 16)
        if not chunk:
            return
        buffer += chunk
        while b"\n" in buffer:
            line, _, buffer = buffer.partition(b"\n")
            yield line


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = _os_write(fd, view)
        view = view[written:]


def main(argv: list[str]) -> int:
    """Serves requests until the request channel closes; returns 0."""
    in_fd, out_fd = _int(argv[0]), _int(argv[1])
    for line in _read_lines(in_fd):
        request = _loads(line)
        reply = call_row(request)
        _write_all(out_fd, reply.encode("utf-8", "surrogatepass") + b"\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
