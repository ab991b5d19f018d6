"""The caller: imports production entries and calls them on the inputs it is sent.

Started by `observe.py` (the supervisor) as `python3 caller.py IN_FD OUT_FD`. It reads one request
per line from IN_FD and writes one reply per line to OUT_FD; stdin is /dev/null and stdout/stderr
go to the caller log, so nothing production code prints can reach the channel by accident.

A request holds a row's inputs only (docs/design.md section 8):

    {"id": ID, "entry": "pkg.mod:fn", "kind": KIND, "seed": INT, "args": [NAME...], "repeat": N,
     "packages": [NAME...], "samples": [...]}

with samples `{kw: value}` (bound), `{"state": S, "kwargs": {...}}` (idempotent) or `[arg, ...]`
(exact_table), and `"packages": [NAME, ...]`, the production packages. The reply is
`{"id": ID, "results": [R, ...], "ran": [NAME, ...]}`, one R per sample, or
`{"id": ID, "error": "..."}` when the entry cannot be loaded. R is `{"value": V}` (for idempotent,
V is the list of states after each call), `{"raised": "Type: message", "classes": [C, ...]}` (C the
`module:qualname` of each class of the raised class's method resolution order, the raised class
first: the judge tells a subclass of an expected exception by them, spec/raised.py) or
`{"unplain": "why"}`.
`ran` is the coverage record (docs/design.md section 12): the `module:qualname` of every function
of the production packages entered while the entry was called on the samples; the judge keeps it
beside the verdict and judges nothing by it.

Nothing the caller writes is trusted: production code shares this process and may rewrite it.
The judge parses every reply strictly and decides; this module only has to be correct for honest
production code, and to survive the usual ways a result can misbehave (subclasses, custom `__eq__`,
objects mutated after they are returned: each result is encoded as soon as it is returned, and
each call gets a fresh copy of its inputs).

Standard library only; this file must not import the gate package.
"""

import os, sys; sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != os.path.dirname(os.path.realpath(__file__))]  # noqa: E401,E501,E702,I001 - see actions/__init__.py  # fmt: skip

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
_tuple: type[tuple[Any, ...]] = tuple
_issubclass = issubclass
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
_set = set
_frozenset = frozenset
_bytes = bytes
# The builders that take a JSON array whole (`build = { x = "builtins:tuple" }`): docs/oracles.md;
# spec/call_fields.py CONTAINER_BUILDS names the same. `bytes` takes an array of ints from 0 to
# 255, `dict` an array of [key, value] pairs.
_CONTAINERS: tuple[type, ...] = (_tuple, _set, _frozenset, _bytes, _dict)
_settrace = sys.settrace
_gettrace = sys.gettrace
_monitoring = getattr(sys, "monitoring", None)  # Python 3.12 and later
_modules = sys.modules
# `type`'s own descriptors of a class's method resolution order and names (raised_classes).
_type_mro = type.__dict__["__mro__"]
_type_module = type.__dict__["__module__"]
_type_qualname = type.__dict__["__qualname__"]

MAX_DEPTH = 100
MAX_REPLY_BYTES = 64 << 20  # the supervisor refuses longer replies
# At most this many names in a row's coverage record (spec/ran_record.py MAX_RAN_FUNCTIONS; this
# side imports nothing of the gate), and the name sys.monitoring knows the recorder by.
MAX_RAN_FUNCTIONS = 10000
# At most this many classes of a raised result, each of at most this many characters
# (spec/raised.py MAX_CLASSES, MAX_CLASS_CHARS).
MAX_CLASSES = 64
MAX_CLASS_CHARS = 300
_TOOL_NAME = "oracle-gate"
# How a row whose callables could not be loaded begins its error (observe.py starts a fresh caller
# after such a row and holds the same words).
LOAD_ERROR = "cannot load entry"


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


def _raised(exc: BaseException) -> dict[str, Any]:
    """A raised result: `{"raised": "Type: message", "classes": [C, ...]}`, C the `module:qualname`
    of each class of the raised class's method resolution order, the raised class first, at most
    MAX_CLASSES of them (spec/raised.py reads it; a class whose name it would refuse is left out)."""
    text = f"{_type(exc).__name__}: {exc}"
    return {"raised": text[:500], "classes": raised_classes(_type(exc))}


def raised_classes(cls: type) -> list[str]:
    """`module:qualname` of each class of `cls`'s method resolution order (read through `type`'s own
    `__mro__`, so a metaclass cannot rename it), those `_plain_name` accepts, of at most
    MAX_CLASS_CHARS characters and that name the class itself (`_named`), the first MAX_CLASSES;
    [] when they cannot be read. Raises nothing."""
    try:
        names = []
        for item in _type_mro.__get__(cls, _type):
            module, qualname = _type_module.__get__(item, _type), _type_qualname.__get__(item, _type)
            name = f"{module}:{qualname}" if _type(module) is _str and _type(qualname) is _str else ""
            if name and _len(name) <= MAX_CLASS_CHARS and _plain_name(module, qualname) and _named(item, name):
                names.append(name)
        return names[:MAX_CLASSES]
    except _BaseException:
        return []


def _named(cls: type, name: str) -> bool:
    """True when `module:qualname` (`name`) leads, through the loaded module and its attributes, to
    `cls` itself: a class whose body assigns another class's `__module__` and `__qualname__` is
    not reported under that name. Raises nothing."""
    module, _, qualname = name.partition(":")
    try:
        found: Any = _modules.get(module)
        for part in qualname.split("."):
            found = _getattr(found, part)
        return found is cls
    except _BaseException:
        return False


def _copy(value: Any) -> Any:
    """A fresh copy of a plain value (inputs are plain: they come from strict JSON)."""
    return _loads(encode(value, "input"))


def resolve(name: str) -> Any:
    """The callable `package.module:name`, `package.module:Class.name` or `builtins:name` names
    (imported here, in the caller's process).

    Raises:
        whatever the import or the attribute lookup raises; TypeError when it is not callable.
    """
    module_name, _, qualname = _str(name).partition(":")
    found: Any = _import_module(module_name)
    for part in qualname.split("."):
        found = _getattr(found, part)
    if not _callable(found):
        raise TypeError(f"{name} is not callable")
    return found


class Each:
    """`each:<builder>` of a row's `build` (spec/call_fields.py EACH): `inner` builds every item."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner


def builder(name: str) -> Any:
    """The builder a `build` value names: `Each` for `each:<builder>`, else the callable (`resolve`).

    Raises:
        as `resolve`.
    """
    if _str(name).startswith("each:"):
        return Each(builder(_str(name)[5:]))
    return resolve(name)


def built(make: Any, value: Any) -> Any:
    """What `make` builds from a plain JSON value: `make(*value)` for an array, `make(**value)` for
    an object, `make(value)` for anything else; the container types tuple, set, frozenset, bytes
    and dict take an array whole, `make(value)` (docs/oracles.md, "Methods and objects"); an `Each`
    builds every item of an array and gives the list.

    Raises:
        TypeError: for an `Each` given anything but an array; whatever `make` raises.
    """
    if _type(make) is Each:
        if _type(value) is not _list:
            raise TypeError("an each: builder takes an array")
        return [built(make.inner, item) for item in value]
    if make in _CONTAINERS:
        return make(value)
    if _type(value) is _list:
        return make(*value)
    if _type(value) is _dict:
        return make(**value)
    return make(value)


def given(value: Any) -> Any:
    """An argument as production code gets it: `{"callable": "module:name"}` (an object with that
    one key) is the callable it names (`resolve`), anything else the value itself (docs/oracles.md,
    "Structures and callables as arguments"); the gate checked each name when it read the samples."""
    if _type(value) is _dict and _len(value) == 1 and _type(value.get("callable")) is _str:
        return resolve(value["callable"])
    return value


def _plain(value: Any, depth: int = 0) -> Any:
    """A projected value with every tuple (a NamedTuple too) and list turned into a list,
    recursively; anything else as it is, for `encode` to judge (so a subclass of str stays a
    subclass, and is refused)."""
    if depth > MAX_DEPTH:
        return value
    if _issubclass(_type(value), _tuple) or _type(value) is _list:
        return [_plain(item, depth + 1) for item in value]
    if _type(value) is _dict:
        return {key: _plain(item, depth + 1) for key, item in value.items()}
    return value


def project(value: Any, how: Any) -> Any:
    """`value` turned into plain JSON by a row's `project` (None: as it is): `"str"`, `"int"`,
    `"float"`, `"bool"` convert with that built-in; `"list"` iterates; `"len"` is `len(value)`;
    `{"attrs": [name, ...]}` an object of those attributes; `{"call": name}` what the method
    `name()` returns. Tuples become lists; the result is still checked strictly by `encode`."""
    if how is None:
        return value
    if _type(how) is _dict:
        if "attrs" in how:
            return {name: _plain(_getattr(value, name)) for name in how["attrs"]}
        return _plain(_getattr(value, how["call"])())
    convert: Any = {"str": _str, "int": _int, "float": _float, "bool": _bool, "len": _len}.get(how)
    if convert is not None:
        return convert(value)
    return [_plain(item) for item in value]


class Row:
    """A request's callables, resolved once: the entry (or, for a method row, the receiver's
    builder and the method's name), the builders of `build`, the `inverse`, the rest of `entries`."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.kind = request["kind"]
        self.project = request.get("project")
        self.args_names: list[str] = request.get("args_names") or []
        self.over: Any = request.get("over")
        self.repeat: Any = request.get("repeat")
        self.style = request.get("style")
        receiver = request.get("receiver")
        self.receiver = resolve(receiver) if receiver is not None else None
        self.method = _str(request["entry"]).rpartition(".")[2]
        self.fn: Any = resolve(request["entry"]) if receiver is None else None
        self.builds = {name: builder(maker) for name, maker in (request.get("build") or {}).items()}
        self.inverse: Any = resolve(request["inverse"]) if request.get("inverse") is not None else None
        self.then = [resolve(name) for name in (request.get("entries") or [])[1:]]
        self.element: Any = request.get("element")

    def target(self, receiver: Any) -> Any:
        """The function to call: the entry, or the method of the receiver built from its JSON value."""
        if self.receiver is None:
            return self.fn
        return _getattr(built(self.receiver, receiver), self.method)

    def call_keywords(self, sample: dict[str, Any]) -> Any:
        """The entry called on a keyword sample (a fresh copy: `receiver` and `build` applied)."""
        kwargs = _copy(sample)
        receiver = kwargs.pop("receiver", None) if self.receiver is not None else None
        for name in kwargs:
            kwargs[name] = given(kwargs[name])
        for name, maker in self.builds.items():
            if name in kwargs:
                kwargs[name] = built(maker, kwargs[name])
        return self.target(receiver)(**kwargs)

    def call_positional(self, values: list[Any], receiver: Any = None) -> Any:
        """The entry called on positional values (a fresh copy), each named in `args_names` built."""
        args = [given(value) for value in _copy(values)]
        for index, name in enumerate(self.args_names[: _len(args)]):
            if name in self.builds:
                args[index] = built(self.builds[name], args[index])
        return self.target(receiver)(*args)

    def once(self, sample: Any) -> str:
        """The entry called on a keyword sample, then each of the rest of `entries` on the result before."""
        result = self.call_keywords(sample)
        for then in self.then:
            result = then(result)
        return encode(project(result, self.project))

    def inverted(self, sample: Any) -> str:
        """`inverse(entry(x))` for a keyword sample."""
        return encode(project(self.inverse(self.call_keywords(sample)), self.project))

    def positional(self, sample: Any) -> str:
        """The entry called on a sample's argument list, or on `{"args": [...], "receiver": R}`."""
        if _type(sample) is _dict:
            return encode(project(self.call_positional(sample["args"], sample["receiver"]), self.project))
        return encode(project(self.call_positional(sample), self.project))

    def over_values(self, sample: Any) -> str:
        """The entry called once per value of `over` (the sample's other arguments kept), in order."""
        return encode(
            [project(self.call_keywords(dict(sample, **{self.over: item})), self.project) for item in sample[self.over]]
        )

    def swapped_and_same(self, sample: Any) -> str:
        """`[f(a, b), f(b, a), f(a, a)]` for a sample `[a, b]`."""
        a, b = sample
        return encode([project(self.call_positional(pair), self.project) for pair in ([a, b], [b, a], [a, a])])

    def swapped(self, sample: Any) -> str:
        """`[f(a, b), f(b, a)]` for a sample `[a, b]`."""
        a, b = sample
        return encode([project(self.call_positional(pair), self.project) for pair in ([a, b], [b, a])])

    def argument(self, name: Any, value: Any) -> Any:
        """A fresh copy of one plain argument value, built by the builder of `name` in `build` (if any)."""
        value = given(_copy(value))
        return built(self.builds[name], value) if name in self.builds else value

    def grouped(self, sample: Any) -> str:
        """`[f(f(a, b), c), f(a, f(b, c))]` for a sample `[a, b, c]`, each argument built by its
        name in `args_names` and copied afresh for each side."""
        f = self.target(None)
        names = (self.args_names + [None, None, None])[:3]
        a, b, c = [self.argument(name, value) for name, value in zip(names, sample, strict=False)]
        left = encode(project(f(f(a, b), c), self.project))
        a, b, c = [self.argument(name, value) for name, value in zip(names, sample, strict=False)]
        return "[" + left + "," + encode(project(f(a, f(b, c)), self.project)) + "]"

    def with_element(self, sample: Any) -> str:
        """`[f(a, e), f(e, a)]` for a sample `{name: a}`, e the row's `element`; `a` and `e` are both
        built by the builder of that name (both positions take values of one type)."""
        f = self.target(None)
        ((name, a),) = sample.items()
        first = encode(project(f(self.argument(name, a), self.argument(name, self.element)), self.project))
        second = encode(project(f(self.argument(name, self.element), self.argument(name, a)), self.project))
        return "[" + first + "," + second + "]"

    def states(self, sample: Any) -> str:
        """The states after each of `repeat` calls, each fed back and encoded as soon as it is returned."""
        state_text = encode(sample["state"], "state")
        kwargs = sample["kwargs"]
        states = []
        for number in range(self.repeat):
            returned = self.fn(_loads(state_text), **_copy(kwargs))
            state_text = encode(returned, f"state after call {number + 1}")
            states.append(state_text)
        return "[" + _join(",", states) + "]"

    def reference(self, sample: Any) -> str:
        """A reference row's value (the reference action): the reference called in the row's `style`."""
        if self.style == "keywords":
            return encode(self.fn(**_copy(sample)))
        if _type(sample) is _dict:
            return encode(self.fn(*_copy(sample["args"]), receiver=_copy(sample["receiver"])))
        return encode(self.fn(*_copy(sample)))


# How the caller calls the entry on one sample, per kind: the kinds of the gate's spec/kinds.py,
# whose `Kind.calls` names the function here (tools/tests/unit/test_kinds.py ties the two; this
# file imports nothing of the gate), and `reference` for the reference action's rows. Each returns
# the encoded value of the sample.
CALLS = {
    "bound": Row.once,
    "matches": Row.once,
    "agrees": Row.once,
    "composed": Row.once,
    "round_trip": Row.inverted,
    "idempotent": Row.states,
    "exact_table": Row.positional,
    "monotonic": Row.over_values,
    "antisymmetric": Row.swapped_and_same,
    "commutative": Row.swapped,
    "associative": Row.grouped,
    "identity": Row.with_element,
    "back_to_back": Row.once,
    "reference": Row.reference,
}


def call_row(request: dict[str, object]) -> str:
    """Runs one row and returns its reply as one line of JSON text (without the newline).

    When the request names `packages` (a list of top-level package names), the reply also holds
    `"ran"`: the functions of those packages entered while the samples were served (receivers,
    built arguments and projections included: `start_recording`, `ran_names`); it has none when
    recording could not start or the names could not be read. The row's import of its callables is
    not recorded.

    Raises:
        KeyError: for a request without `kind` or `samples` (the supervisor always sends both);
            whatever production code raises is a sample's result, never raised here.
    """
    ident = request.get("id")
    try:
        row = Row(request)
    except _BaseException as exc:
        return _dumps({"id": ident, "error": f"{LOAD_ERROR} {request.get('entry')}: {_raised(exc)['raised']}"})
    seed = request.get("seed")
    _seed(seed if _type(seed) is _int else 0)
    packages = request.get("packages")
    record = _type(packages) is _list and all(_type(p) is _str for p in packages)
    seen: set[object] = _set()
    recording = start_recording(seen) if record else None

    def serve(sample: Any) -> Any:
        return _serve(row, sample)

    try:
        results, limit = _call_samples(recording[0](serve) if recording is not None else serve, request)
    finally:
        if recording is not None:
            recording[1]()
    if limit is not None:  # the row fails, naming the limit
        return _dumps({"id": ident, "error": limit})
    ran = ran_names(seen, packages) if recording is not None else None  # type: ignore[arg-type]
    return (
        '{"id":'
        + _dumps(ident)
        + ',"results":['
        + _join(",", results)
        + "]"
        + (',"ran":' + _dumps(ran, separators=(",", ":")) if ran is not None else "")
        + "}"
    )


def _serve(row: Row, sample: Any) -> str:
    """The result text of one sample: `{"value": V}`, V as its kind's function of CALLS encodes it
    (for idempotent, the states after each call, each encoded as soon as it is returned).

    Raises:
        NotPlain: when a result is not plain JSON; whatever production code raises."""
    call = CALLS.get(row.kind)
    if call is None:
        return _dumps({"raised": f"unknown kind {row.kind!r}"})
    return '{"value":' + call(row, sample) + "}"


def _call_samples(serve: Any, request: dict[str, object]) -> tuple[list[str], str | None]:
    """Serves each sample of the row (`serve(sample)` gives its result text); returns (one result
    text per sample, None), or ([], the limit) when a call reached one (`_limit_hit`)."""
    results: list[str] = []
    for sample in request["samples"]:  # type: ignore[attr-defined]
        try:
            results.append(serve(sample))
        except NotPlain as exc:
            results.append(_dumps({"unplain": _str(exc)}))
        except _BaseException as exc:
            limit = _limit_hit(exc)
            if limit is not None:
                return [], limit
            results.append(_dumps(_raised(exc)))
    return results, None


def start_recording(seen: set[object]) -> tuple[Any, Any] | None:
    """Starts adding to `seen` the code object of every Python function entered while the entry
    runs; returns (wrap, stop): `wrap(fn)` is the entry to call instead of `fn`, `stop()` ends the
    recording. None when recording cannot start (another tool holds sys.monitoring's coverage id).

    On Python 3.12 and later: sys.monitoring's PY_START event from now until `stop`, which reports
    each code object once and is then disabled for it until the next row (`restart_events`), so a
    function called a million times costs one callback; it sees every thread. Before 3.12: a global
    trace function (sys.settrace) that asks for no line events, set only while the wrapped entry
    runs (so the caller's own encoding costs nothing), in the calling thread only; it runs once per
    Python call and puts back the trace function there was before. Either way production code may
    switch it off or feed it: the record is untrusted (docs/threat-model.md). Raises nothing."""
    monitoring = _monitoring
    add = seen.add
    if monitoring is None:

        def trace(frame: Any, event: str, arg: Any) -> None:  # only "call" events reach it
            add(frame.f_code)

        return (lambda fn: _traced(fn, trace)), (lambda: None)
    tool = monitoring.COVERAGE_ID
    disable = monitoring.DISABLE
    try:
        if monitoring.get_tool(tool) != _TOOL_NAME:
            monitoring.use_tool_id(tool, _TOOL_NAME)
        monitoring.register_callback(tool, monitoring.events.PY_START, lambda code, offset: (add(code), disable)[1])
        monitoring.restart_events()
        monitoring.set_events(tool, monitoring.events.PY_START)
    except ValueError:
        return None
    return (lambda fn: fn), (lambda: monitoring.set_events(tool, 0))


def _traced(fn: Any, trace: Any) -> Any:
    """`fn`, run with `trace` as the global trace function of this thread while it runs."""

    def call(*args: Any, **kwargs: Any) -> Any:
        previous = _gettrace()
        _settrace(trace)
        try:
            return fn(*args, **kwargs)
        finally:
            _settrace(previous)

    return call


def _plain_name(module: str, qualname: str) -> bool:
    """True for a module `__name__` and a function's `co_qualname` that spec/ran_record.py accepts
    (identifiers, and `<locals>` inside a qualified name)."""
    parts = qualname.split(".")
    return all(part.isidentifier() for part in module.split(".")) and all(
        part.isidentifier() or 0 < i < _len(parts) - 1 and part == "<locals>" for i, part in enumerate(parts)
    )


def ran_names(seen: set[object], packages: list[str]) -> list[str] | None:
    """`module:qualname` of each code object in `seen` whose file is that of a loaded module of
    `packages` (`sys.modules`, a module's own name or a dotted name below it; a package's
    `__init__.py` named by the package), lambdas,
    comprehensions and module bodies left out; sorted, at most MAX_RAN_FUNCTIONS; None when the
    modules cannot be read (production code may have replaced them). `seen` holds code objects
    (`start_recording`), `packages` top-level package names. Raises nothing."""
    wanted = _set(packages)
    try:
        files: dict[str, str] = {}
        for name, module in _list(_modules.items()):
            if _type(name) is _str and name.partition(".")[0] in wanted:
                file = _getattr(module, "__file__", None)
                if _type(file) is _str and file not in files:
                    # A package's `__init__.py` imported as `pkg.__init__` is still `pkg`'s file.
                    files[file] = name[: -len(".__init__")] if name.endswith(".__init__") else name
        names = _set()
        for code in seen:
            module_name = files.get(code.co_filename)  # type: ignore[attr-defined]
            qualname = _getattr(code, "co_qualname", None)
            if module_name is None or _type(qualname) is not _str or code.co_name.startswith("<"):  # type: ignore[attr-defined]
                continue
            if _plain_name(module_name, qualname):
                names.add(module_name + ":" + qualname)
        return _sorted(names)[:MAX_RAN_FUNCTIONS]
    except _BaseException:
        return None


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
