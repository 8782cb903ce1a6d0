"""`Recorder`: write a judge trace (formats §1) while the agent runs.

    rec = Recorder(trace_id="refund-once/live-1", scenario="refund-once")

    @rec.tool("refund_order", mutating=True)
    def refund_order(orderId: str, amountCents: int) -> dict: ...

    rec.user("Please refund order-17.")
    refund_order(orderId="order-17", amountCents=4200)   # a tool_call and its tool_result
    rec.assistant("Done.")
    rec.save("out/live-1.json")

What it assigns: `seq` (1, 2, …), `turn` (the number of user messages so far), call ids (`c1`,
`c2`, …) and a clock reading on every event (`metadata.clock`: a logical clock counting
events unless `clock=` gives another, e.g. `time.monotonic`). Arguments and results are
exact JSON-safe copies (judge.record.jsonsafe); whatever could not be copied exactly is
listed in the event's `metadata.lossy`. A tool that raises gets a `tool_result` with
`error` ("ValueError: …") and the exception goes on to the caller.

Modes: `live` runs every tool. `sandbox` runs the tools too — against `rec.state`, a copy of
the `state=` given, when there is one — except those marked `external=True` (a message to a
customer, a courier booking, a payment): their function never runs; the call is recorded as an
intent (`metadata.intent: true`) and answered with the tool's configured `stand_in`.

`with Recorder(..., path=...) as rec:` saves on exit, also when the block raises (the trace's
`metadata.termination` is then `error` — or `interrupted` for Ctrl-C — with the exception in
`metadata.error`). Saving is atomic (a temporary file in the same directory, renamed), and
the trace is validated by the same model `judge check` loads it with before a byte is written.

Thread-safe: tools may run in threads or as concurrent asyncio tasks; each event is appended
under a lock, so `seq` is the order things happened in.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import itertools
import json
import os
import re
import tempfile
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, ParamSpec, TypeVar, cast, overload

from pydantic import ValidationError

from judge.errors import InputError
from judge.record.jsonsafe import Copied, copy_json
from judge.trace.document import check_document
from judge.trace.fast import parse_trace_data
from judge.trace.model import Trace

P = ParamSpec("P")
R = TypeVar("R")
Mode = Literal["live", "sandbox"]
MODES: tuple[str, ...] = ("live", "sandbox")

#: the longest exception text kept in a trace (an `error` of a tool result, `metadata.error`)
MAX_ERROR = 2000


class _Missing:
    def __repr__(self) -> str:
        return "<not given>"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class ToolSpec:
    """What the recorder knows of one wrapped tool (the driver reads it)."""

    name: str
    mutating: bool
    external: bool
    stand_in: Any
    recorder: Recorder
    fn: Callable[..., Any]

    def answer(self, args: dict[str, Any]) -> Any:
        """The stand-in result of a sandboxed external call: `stand_in(**args)` when it is
        callable, else a fresh copy of the configured value."""
        if callable(self.stand_in):
            return self.stand_in(**args)
        return copy.deepcopy(self.stand_in)


def spec_of(tool: Any) -> ToolSpec | None:
    """The `ToolSpec` of a function `Recorder.tool` wrapped, else None."""
    found = getattr(tool, "__judge_tool__", None)
    return found if isinstance(found, ToolSpec) else None


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def file_name(trace_id: str) -> str:
    """A file name (no suffix) for a trace id: only ASCII letters, digits, `.`, `_` and
    `-`, never hidden, at most 120 characters (`refund-once/live 1` → `refund-once_live_1`)."""
    name = _UNSAFE.sub("_", trace_id).strip("._") or "trace"
    return name[:120]


def error_text(exc: BaseException) -> str:
    """`Type: message`, one exception as a trace states it."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= MAX_ERROR else text[: MAX_ERROR - 1] + "…"


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


@dataclass
class _Call:
    tool: str
    answered: bool = False


class Recorder:
    """Records one run of an agent as one judge trace (see the module doc)."""

    def __init__(self, trace_id: str, scenario: str | None = None, *, mode: Mode = "live",
                 path: str | os.PathLike[str] | None = None,
                 candidate: Mapping[str, Any] | None = None,
                 metadata: Mapping[str, Any] | None = None,
                 state: Mapping[str, Mapping[str, Any]] | None = None,
                 clock: Callable[[], float | int] | None = None) -> None:
        if not isinstance(trace_id, str) or not trace_id:
            raise ValueError("trace_id must be a non-empty str")
        if scenario is not None and not isinstance(scenario, str):
            raise TypeError("scenario must be a str (the scenario's id) or None")
        if mode not in MODES:
            raise ValueError(f"mode must be 'live' or 'sandbox', not {mode!r}")
        self.trace_id = _text(trace_id, "trace_id")
        self.scenario = scenario
        self.mode: Mode = mode
        self.path = Path(path) if path is not None else None
        self.candidate: dict[str, Any] = copy_json(dict(candidate or {})).value
        self.metadata: dict[str, Any] = copy_json(dict(metadata or {})).value
        self.tools: dict[str, Callable[..., Any]] = {}
        self.saved: Path | None = None
        self._events: list[dict[str, Any]] = []
        self._lock = threading.RLock()
        self._turn = 0
        self._call_ids = itertools.count(1)
        self._calls: dict[str, _Call] = {}
        self._ticks = itertools.count(1)
        self._clock = clock
        self._end_snapshot = False
        self.state: dict[str, dict[str, Any]] | None = None
        if state is not None:
            start = _state_copy(state)
            self.state = copy.deepcopy(start.value)
            self._append({"kind": "state_snapshot", "phase": "start", "state": start.value},
                         start.lossy)

    # -- events ---------------------------------------------------------------------------
    @property
    def events(self) -> list[dict[str, Any]]:
        """The events recorded so far (copies, as the trace will hold them)."""
        with self._lock:
            return copy.deepcopy(self._events)

    def __len__(self) -> int:
        """The number of events recorded so far."""
        return len(self._events)

    def has_call(self, call_id: str) -> bool:
        """Whether a tool call with this id was recorded."""
        return call_id in self._calls

    @property
    def turn(self) -> int:
        """The current turn: the number of user messages recorded so far."""
        return self._turn

    def _tick(self) -> float | int:
        if self._clock is None:
            return next(self._ticks)
        reading = self._clock()
        if not isinstance(reading, int | float) or isinstance(reading, bool):
            raise TypeError(f"clock() must return a number, not {type(reading).__name__}")
        return reading

    def _append(self, event: dict[str, Any], lossy: list[str] | None = None,
                meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
        with self._lock:
            if event["kind"] == "user":
                self._turn += 1
            metadata: dict[str, Any] = {"clock": self._tick()}
            if meta:
                metadata.update(meta)
            if lossy:
                metadata["lossy"] = lossy
            full = {"seq": len(self._events) + 1, "turn": self._turn, **event,
                    "metadata": metadata}
            self._events.append(full)
            if event["kind"] == "state_snapshot" and event.get("phase") == "end":
                self._end_snapshot = True
            return full

    def user(self, text: str) -> int:
        """A user message; it starts the next turn. Returns its seq."""
        return int(self._append({"kind": "user", "text": _text(text, "text")})["seq"])

    def assistant(self, text: str) -> int:
        """A reply of the agent. Returns its seq."""
        return int(self._append({"kind": "assistant", "text": _text(text, "text")})["seq"])

    def summary(self, text: str, reason: str = "compaction") -> int:
        """A summary of the conversation so far (`compaction`, `handoff`, or free text)."""
        return int(self._append({"kind": "summary", "text": _text(text, "text"),
                                 "reason": _text(reason, "reason")})["seq"])

    def state_write(self, key: str, value: Any) -> int:
        """A write to the agent's own memory or state (`key` = `value`)."""
        copied = copy_json(value, "value")
        return int(self._append({"kind": "state_write", "key": _text(key, "key"),
                                 "value": copied.value}, copied.lossy)["seq"])

    def snapshot(self, state: Mapping[str, Mapping[str, Any]],
                 phase: Literal["start", "end"] | None = None) -> int:
        """The state of the world: `{collection: {record_id: record}}`, taken at the
        `start` or the `end` of the run (or where it stands, for None)."""
        if phase not in (None, "start", "end"):
            raise ValueError(f"phase must be 'start', 'end' or None, not {phase!r}")
        copied = _state_copy(state)
        event: dict[str, Any] = {"kind": "state_snapshot", "state": copied.value}
        if phase is not None:
            event["phase"] = phase
        return int(self._append(event, copied.lossy)["seq"])

    def tool_call(self, tool: str, args: Mapping[str, Any], *, call_id: str | None = None,
                  metadata: Mapping[str, Any] | None = None) -> str:
        """A call of `tool`; returns its call id (given, or the next `cN`). Record its
        outcome with `tool_result`. (Wrapped tools do both; adapters call these.)"""
        if not isinstance(args, Mapping):
            raise TypeError(f"args of a tool call must be a mapping, not {type(args).__name__}")
        copied = copy_json(dict(args), "args")
        with self._lock:
            if call_id is None:
                call_id = f"c{next(self._call_ids)}"
                while call_id in self._calls:
                    call_id = f"c{next(self._call_ids)}"
            call_id = _text(call_id, "call_id")
            if call_id in self._calls:
                raise ValueError(f"call id {call_id!r} was already used in this trace")
            tool = _text(tool, "tool")
            self._calls[call_id] = _Call(tool=tool)
            self._append({"kind": "tool_call", "tool": tool, "args": copied.value,
                          "call_id": call_id}, copied.lossy, metadata)
        return call_id

    def tool_result(self, call_id: str, result: Any = None, *, error: str | None = None,
                    metadata: Mapping[str, Any] | None = None) -> int:
        """The outcome of the call `call_id`: its `result`, or an `error` (the call failed
        or timed out). Returns the result's seq."""
        copied = copy_json(result, "result")
        with self._lock:
            call = self._calls.get(call_id)
            if call is None:
                raise ValueError(f"no tool call with call id {call_id!r} in this trace")
            if call.answered:
                raise ValueError(f"tool call {call_id!r} already has its result")
            call.answered = True
            event: dict[str, Any] = {"kind": "tool_result", "tool": call.tool,
                                     "call_id": call_id, "result": copied.value}
            if error is not None:
                event["error"] = _text(error, "error")
            return int(self._append(event, copied.lossy, metadata)["seq"])

    # -- tools ------------------------------------------------------------------------------
    @overload
    def tool(self, name: Callable[P, R], /) -> Callable[P, R]: ...

    @overload
    def tool(self, name: str | None = None, /, *, mutating: bool = False,
             external: bool = False, stand_in: Any = MISSING
             ) -> Callable[[Callable[P, R]], Callable[P, R]]: ...

    def tool(self, name: str | Callable[..., Any] | None = None, /, *, mutating: bool = False,
             external: bool = False, stand_in: Any = MISSING) -> Any:
        """Wrap a tool (sync or async) so each call is recorded: `@rec.tool("get_order")`,
        `@rec.tool` (named after the function), `rec.tool("pay", mutating=True)(pay)`.

        `mutating`: the call writes durable state (the driver's `max_mutations` counts it).
        `external`: the call leaves the building; in sandbox mode it never runs and answers
        `stand_in` (a value, copied for each call, or a function of the call's arguments).
        """
        if callable(name):
            return self.tool()(name)

        def wrap(fn: Callable[P, R]) -> Callable[P, R]:
            tool_name = name or getattr(fn, "__name__", None)
            if not tool_name or not isinstance(tool_name, str):
                raise ValueError("give the tool a name: @rec.tool('name')")
            if external and self.mode == "sandbox" and stand_in is MISSING:
                raise ValueError(f"external tool '{tool_name}' needs stand_in= in sandbox "
                                 "mode: the result its calls get instead of running")
            if tool_name in self.tools:
                raise ValueError(f"a tool named '{tool_name}' is already recorded")
            spec = ToolSpec(tool_name, bool(mutating), bool(external),
                            None if stand_in is MISSING else stand_in, self, fn)
            wrapped = _wrap(spec, fn)
            self.tools[tool_name] = wrapped
            return wrapped

        return wrap

    @property
    def intents(self) -> list[dict[str, Any]]:
        """The calls sandbox mode recorded instead of making: `{tool, args, seq}` each."""
        return [{"tool": e["tool"], "args": e["args"], "seq": e["seq"]} for e in self.events
                if e["kind"] == "tool_call" and e["metadata"].get("intent")]

    # -- the trace --------------------------------------------------------------------------
    def end(self, termination: str, **detail: Any) -> None:
        """State how the run ended (`metadata.termination` and its details); the bounded
        driver says `finished` or `forced`."""
        with self._lock:
            self.metadata["termination"] = _text(termination, "termination")
            for k, v in detail.items():
                self.metadata[k] = copy_json(v).value

    def document(self) -> dict[str, Any]:
        """The trace as JSON data (formats §1), with an end snapshot of `rec.state` when the
        recorder was given a state and no end snapshot was recorded."""
        with self._lock:
            return copy.deepcopy(self._document())

    def _document(self) -> dict[str, Any]:
        """`document()` sharing the recorder's own event dicts (call under the lock)."""
        with self._lock:
            events = list(self._events)
            if self.state is not None and not self._end_snapshot:
                end = _state_copy(self.state)
                meta: dict[str, Any] = {"clock": self._tick()}
                if end.lossy:
                    meta["lossy"] = end.lossy
                events.append({"seq": len(events) + 1, "turn": self._turn,
                               "kind": "state_snapshot", "phase": "end",
                               "state": end.value, "metadata": meta})
            metadata = copy_json(self.metadata).value  # what was set by hand, too
            if not isinstance(metadata, dict):
                metadata = {"metadata": metadata}
            metadata.setdefault("recorder", {"mode": self.mode, **_tool_kinds(self.tools)})
            doc: dict[str, Any] = {"trace_id": self.trace_id}
            if self.scenario is not None:
                doc["scenario"] = self.scenario
            doc["candidate"] = copy_json(self.candidate).value
            doc["metadata"] = metadata
            doc["events"] = events
            return doc

    def trace(self) -> Trace:
        """The trace, validated as `judge check` validates it (ValueError if it is not)."""
        return self._validate(self.document())

    def _validate(self, doc: dict[str, Any]) -> Trace:
        try:
            check_document(doc, self.trace_id, None)
            return Trace.model_validate(doc)
        except InputError as exc:
            raise ValueError(f"the recorded trace is not valid: {exc.message}") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ValueError(f"the recorded trace is not valid: {where}: {first['msg']}"
                             ) from None

    def save(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Write the trace to `path` (default: the recorder's), atomically: `.jsonl` as one
        line, anything else as one indented JSON object. Creates missing parent
        directories. Returns the path written."""
        target = Path(path) if path is not None else self.path
        if target is None:
            raise ValueError("save() needs a path (or give the Recorder path=)")
        with self._lock:
            doc = self._document()
            text = _dumps(doc, compact=target.suffix == ".jsonl")
        if parse_trace_data(text) is None:  # the loader's fast path (pydantic-core) refused:
            self._validate(doc)  # the careful one words why (or, if stricter, accepts)
        write_atomic(target, text)
        self.saved = target
        return target

    def __enter__(self) -> Recorder:
        if self.path is None:
            raise ValueError("`with Recorder(...)` needs path=, where the trace is saved "
                             "on exit")
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is not None and "termination" not in self.metadata:
            kind = "interrupted" if isinstance(exc, KeyboardInterrupt) else "error"
            self.end(kind, error=error_text(exc))
        self.save()


def _dumps(doc: dict[str, Any], *, compact: bool) -> str:
    """A trace as JSON text: one line (`.jsonl`), else indented; strictly JSON."""
    if compact:
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"
    return json.dumps(doc, ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def _tool_kinds(tools: Mapping[str, Callable[..., Any]]) -> dict[str, list[str]]:
    specs = [s for s in (spec_of(t) for t in tools.values()) if s is not None]
    out = {"mutating_tools": sorted(s.name for s in specs if s.mutating),
           "external_tools": sorted(s.name for s in specs if s.external)}
    return {k: v for k, v in out.items() if v}


def _state_copy(state: Mapping[str, Mapping[str, Any]]) -> Copied:
    if not isinstance(state, Mapping) or not all(
            isinstance(k, str) and isinstance(v, Mapping) for k, v in state.items()):
        raise TypeError("a state is {collection: {record_id: record}}: a mapping of str to "
                        "mappings")
    return copy_json(state, "state")


def _signature(fn: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without one
        return None


def _bind(sig: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any]
          ) -> dict[str, Any]:
    """A call's arguments by parameter name (as given: defaults are not filled in)."""
    if not args and sig is not None and all(k in sig.parameters for k in kwargs) and not any(
            p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return dict(kwargs)  # keyword arguments only: named already
    try:
        if sig is None:
            raise TypeError
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return {**({"args": list(args)} if args else {}), **kwargs}
    out: dict[str, Any] = {}
    params = sig.parameters
    for name, value in bound.arguments.items():
        if params[name].kind is inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        elif params[name].kind is inspect.Parameter.VAR_POSITIONAL:
            out[name] = list(value)
        else:
            out[name] = value
    return out


def _wrap(spec: ToolSpec, fn: Callable[P, R]) -> Callable[P, R]:
    rec = spec.recorder
    sandboxed = spec.external and rec.mode == "sandbox"
    sig = _signature(fn)

    def begin(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        call_args = _bind(sig, args, kwargs)
        meta = {"intent": True, "external": True} if sandboxed else None
        return rec.tool_call(spec.name, call_args, metadata=meta), call_args

    def stand_in(call_id: str, call_args: dict[str, Any]) -> Any:
        try:
            answer = spec.answer(call_args)
        except Exception as exc:
            rec.tool_result(call_id, error=error_text(exc), metadata={"stand_in": True})
            raise
        rec.tool_result(call_id, answer, metadata={"stand_in": True})
        return answer

    if inspect.iscoroutinefunction(fn):
        async_fn = cast(Callable[..., Awaitable[Any]], fn)

        async def run_async(*args: Any, **kwargs: Any) -> Any:
            call_id, call_args = begin(args, kwargs)
            if sandboxed:
                return stand_in(call_id, call_args)
            try:
                result = await async_fn(*args, **kwargs)
            except BaseException as exc:
                rec.tool_result(call_id, error=error_text(exc))
                raise
            rec.tool_result(call_id, result)
            return result

        wrapped: Callable[..., Any] = run_async
    else:
        def run(*args: Any, **kwargs: Any) -> Any:
            call_id, call_args = begin(args, kwargs)
            if sandboxed:
                return stand_in(call_id, call_args)
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                rec.tool_result(call_id, error=error_text(exc))
                raise
            rec.tool_result(call_id, result)
            return result

        wrapped = run
    functools.update_wrapper(wrapped, fn)
    wrapped.__judge_tool__ = spec  # type: ignore[attr-defined]
    return cast(Callable[P, R], wrapped)


def write_atomic(target: Path, text: str) -> None:
    """Write `text` to `target` through a temporary file in the same directory, fsynced and
    renamed over it: a reader sees the old file or the new one, never half of one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if target.exists():
            os.chmod(tmp, target.stat().st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
