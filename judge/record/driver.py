"""The bounded driver: run an agent step function under limits, and say when it was stopped.

    def next_step(run: Run) -> Step:        # the agent: look at the run, decide what to do
        ...
        return Step(calls=[Call("get_order", {"orderId": "order-17"})])
        ...
        return Step(say="Done: refund rf-1 is confirmed.", done=True)

    result = drive(next_step, rec.tools, limits=Limits(max_steps=20, max_mutations=5,
                                                       max_identical=3, timeout_s=60))

Each step the driver asks `next_step(run)` for a `Step`, records its `say` as an assistant
message and makes its `calls` through the recorded tools (a call that raises is recorded
with its error and shown to the next step in `run.last`: a failed tool is news for the agent,
not the end of the run). It stops when:

- the agent says it is done (`Step(done=True)`), or `until(run)` — the terminal predicate,
  evaluated after every tool result — holds: `metadata.termination: finished`;
- a limit would be passed: `metadata.termination: forced`, `metadata.termination_limit`
  naming it (`max_steps`, `max_mutations`, `max_identical`, `timeout_s`) and
  `metadata.termination_reason` saying what happened. The call that would pass a call limit
  is not made. A forced run is not a success: judge's completion check fails it whatever
  the trace shows (docs/formats.md, "`metadata.termination`").

`max_steps` counts steps (calls of `next_step`), `max_mutations` calls of tools marked
`mutating=True`, `max_identical` calls of one tool with equal arguments; `None` lifts a
limit. `timeout_s` is wall time, checked before each step and each call; `drive_async` also
cancels a step or an async tool still running when the time is up (`drive` cannot interrupt
a running synchronous function: it stops at the next check).

If `next_step` raises, the run is marked `termination: error` with the exception, and the
exception goes on to the caller (a `with Recorder(...)` around it still saves the trace).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from judge.record.jsonsafe import copy_json
from judge.record.recorder import Recorder, ToolSpec, error_text, spec_of

LIMIT_NAMES = ("max_steps", "max_mutations", "max_identical", "timeout_s")


@dataclass(frozen=True)
class Limits:
    """Bounds of one driven run; None lifts a bound."""

    max_steps: int | None = 20
    max_mutations: int | None = 5
    max_identical: int | None = 3
    timeout_s: float | None = 60.0

    def __post_init__(self) -> None:
        for name in ("max_steps", "max_mutations", "max_identical"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                      or value < 1):
                raise ValueError(f"Limits.{name} must be a whole number ≥ 1 or None, "
                                 f"not {value!r}")
        t = self.timeout_s
        if t is not None and (not isinstance(t, int | float) or isinstance(t, bool)
                              or not math.isfinite(t) or t <= 0):
            raise ValueError(f"Limits.timeout_s must be a finite number of seconds > 0 or "
                             f"None, not {t!r}")

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in LIMIT_NAMES}


@dataclass(frozen=True)
class Call:
    """One tool call an agent step asks for."""

    tool: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.tool, str) or not self.tool:
            raise TypeError(f"Call.tool must be a tool's name, not {self.tool!r}")
        if not isinstance(self.args, Mapping):
            raise TypeError(f"Call.args of '{self.tool}' must be a mapping of argument names "
                            f"to values, not {type(self.args).__name__}")


@dataclass(frozen=True)
class Step:
    """What the agent does in one step: say something, make calls (in order), or finish."""

    say: str | None = None
    calls: Sequence[Call] = ()
    done: bool = False


@dataclass(frozen=True)
class Outcome:
    """A call the previous step made: its result, or the exception it raised."""

    call: Call
    result: Any = None
    error: BaseException | None = None


@dataclass
class Run:
    """What `next_step` sees of the run so far."""

    recorder: Recorder
    limits: Limits
    steps: int = 0
    calls: int = 0
    mutations: int = 0
    #: the outcomes of the previous step's calls, in order
    last: list[Outcome] = field(default_factory=list)
    started: float = 0.0
    _clock: Callable[[], float] = time.monotonic

    @property
    def events(self) -> list[dict[str, Any]]:
        """The trace's events so far (copies)."""
        return self.recorder.events

    @property
    def elapsed(self) -> float:
        return self._clock() - self.started


@dataclass(frozen=True)
class DriveResult:
    """How a driven run ended (what the trace's metadata now says)."""

    termination: str             # "finished" | "forced"
    limit: str | None            # the limit that stopped a forced run
    reason: str
    steps: int
    calls: int
    mutations: int

    @property
    def forced(self) -> bool:
        return self.termination == "forced"


class _Stop(Exception):
    def __init__(self, termination: str, reason: str, limit: str | None = None) -> None:
        super().__init__(reason)
        self.termination = termination
        self.reason = reason
        self.limit = limit


class _Bounds:
    """The limit bookkeeping shared by `drive` and `drive_async`."""

    def __init__(self, run: Run, tools: Mapping[str, Callable[..., Any]],
                 until: Callable[[Run], bool] | None) -> None:
        self.run = run
        self.tools = tools
        self.until = until
        self.identical: Counter[str] = Counter()

    def remaining(self) -> float | None:
        t = self.run.limits.timeout_s
        return None if t is None else t - self.run.elapsed

    def check_time(self) -> None:
        left = self.remaining()
        if left is not None and left <= 0:
            raise _Stop("forced", f"the run took longer than {self.run.limits.timeout_s:g} s "
                        f"(timeout_s={self.run.limits.timeout_s:g})", "timeout_s")

    def before_step(self) -> None:
        run = self.run
        m = run.limits.max_steps
        if m is not None and run.steps >= m:
            raise _Stop("forced", f"{run.steps} steps taken without finishing "
                        f"(max_steps={m})", "max_steps")
        self.check_time()

    def check_until(self) -> None:
        if self.until is not None and self.until(self.run):
            raise _Stop("finished", "the terminal predicate (until) holds")

    def before_call(self, call: Call) -> Callable[..., Any] | None:
        """The tool to call (None: not a tool of this run), once the limits allow it."""
        run = self.run
        tool = self.tools.get(call.tool)
        spec = spec_of(tool) if tool is not None else None
        key = call.tool + "\0" + json.dumps(copy_json(dict(call.args)).value, sort_keys=True)
        m = run.limits.max_identical
        if m is not None and self.identical[key] >= m:
            raise _Stop("forced", f"`{call.tool}` called with the same arguments "
                        f"{self.identical[key] + 1} times (max_identical={m})",
                        "max_identical")
        mutating = spec is not None and spec.mutating
        m = run.limits.max_mutations
        if mutating and m is not None and run.mutations >= m:
            raise _Stop("forced", f"`{call.tool}` would be mutating call {run.mutations + 1} "
                        f"(max_mutations={m})", "max_mutations")
        self.check_time()
        self.identical[key] += 1
        run.calls += 1
        if mutating:
            run.mutations += 1
        return tool

    def unknown(self, call: Call) -> Outcome:
        """A call of a tool the run does not have: recorded as a failed call."""
        rec = self.run.recorder
        exc = LookupError(f"no tool named '{call.tool}' (tools: "
                          f"{', '.join(sorted(self.tools)) or 'none'})")
        call_id = rec.tool_call(call.tool, dict(call.args))
        rec.tool_result(call_id, error=error_text(exc))
        return Outcome(call, error=exc)


def _tools_and_recorder(tools: Mapping[str, Callable[..., Any]] | Iterable[Callable[..., Any]],
                        recorder: Recorder | None
                        ) -> tuple[dict[str, Callable[..., Any]], Recorder]:
    items: list[tuple[str, Callable[..., Any]]] = list(tools.items()) if isinstance(
        tools, Mapping) else [(_name_of(t), t) for t in tools]
    found: dict[str, Callable[..., Any]] = {}
    owners: set[int] = set()
    rec = recorder
    for name, tool in items:
        spec = spec_of(tool)
        if spec is None:
            if recorder is None:
                raise TypeError(f"tool '{name}' is not a recorded tool: wrap it with "
                                "@rec.tool, or pass recorder= to drive")
            tool = _adopt(recorder, name, tool)
            spec = spec_of(tool)
            assert spec is not None
        owners.add(id(spec.recorder))
        rec = rec or spec.recorder
        found[name] = tool
    if rec is None:
        raise TypeError("drive needs a recorder: tools wrapped with @rec.tool, or recorder=")
    if len(owners - {id(rec)}) > 0:
        raise ValueError("every tool of a driven run must be recorded by the same Recorder")
    return found, rec


def _name_of(tool: Callable[..., Any]) -> str:
    spec = spec_of(tool)
    return spec.name if spec is not None else str(getattr(tool, "__name__", "") or "tool")


def _adopt(rec: Recorder, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    from judge.record.recorder import _wrap

    return _wrap(ToolSpec(name, False, False, None, rec, fn), fn)


def _finish(run: Run, bounds: _Bounds, stop: _Stop) -> DriveResult:
    rec = run.recorder
    detail: dict[str, Any] = {"termination_reason": stop.reason,
                              "limits": run.limits.as_dict(),
                              "drive": {"steps": run.steps, "calls": run.calls,
                                        "mutations": run.mutations}}
    if stop.limit is not None:
        detail["termination_limit"] = stop.limit
    rec.end(stop.termination, **detail)
    return DriveResult(stop.termination, stop.limit, stop.reason, run.steps, run.calls,
                       run.mutations)


def _failed(run: Run, exc: BaseException) -> None:
    run.recorder.end("error", error=error_text(exc), limits=run.limits.as_dict(),
                     drive={"steps": run.steps, "calls": run.calls,
                            "mutations": run.mutations})


def _step_of(step: Any) -> Step:
    if not isinstance(step, Step):
        raise TypeError(f"next_step must return a judge.record.Step, not "
                        f"{type(step).__name__}")
    if isinstance(step.calls, Call) or not all(isinstance(c, Call) for c in step.calls):
        raise TypeError("Step.calls must be a list of judge.record.Call")
    return step


def drive(next_step: Callable[[Run], Step],
          tools: Mapping[str, Callable[..., Any]] | Iterable[Callable[..., Any]], *,
          limits: Limits | None = None, until: Callable[[Run], bool] | None = None,
          recorder: Recorder | None = None,
          clock: Callable[[], float] = time.monotonic) -> DriveResult:
    """Run `next_step` under `limits` (see the module doc). `tools`: the recorded tools by
    name (`rec.tools`) or a list of them; plain functions are recorded too when `recorder=`
    is given."""
    found, rec = _tools_and_recorder(tools, recorder)
    run = Run(rec, limits or Limits(), started=clock(), _clock=clock)
    bounds = _Bounds(run, found, until)
    try:
        while True:
            bounds.check_until()
            bounds.before_step()
            step = _step_of(next_step(run))
            run.steps += 1
            if step.say is not None:
                rec.assistant(step.say)
            outcomes: list[Outcome] = []
            for call in step.calls:
                tool = bounds.before_call(call)
                if tool is None:
                    outcomes.append(bounds.unknown(call))
                    continue
                if inspect.iscoroutinefunction(tool):
                    raise TypeError(f"tool '{call.tool}' is async: use drive_async")
                try:
                    result = tool(**call.args)
                except Exception as exc:
                    outcomes.append(Outcome(call, error=exc))
                else:
                    outcomes.append(Outcome(call, result))
                bounds.check_until()
            run.last = outcomes
            if step.done:
                raise _Stop("finished", "the agent finished")
    except _Stop as stop:
        return _finish(run, bounds, stop)
    except BaseException as exc:
        _failed(run, exc)
        raise


async def drive_async(next_step: Callable[[Run], Step | Awaitable[Step]],
                      tools: Mapping[str, Callable[..., Any]] | Iterable[Callable[..., Any]],
                      *, limits: Limits | None = None,
                      until: Callable[[Run], bool] | None = None,
                      recorder: Recorder | None = None,
                      clock: Callable[[], float] = time.monotonic) -> DriveResult:
    """`drive` for async agents: `next_step` and the tools may be async; a step or tool
    still running when `timeout_s` is up is cancelled (its call recorded as failed)."""
    found, rec = _tools_and_recorder(tools, recorder)
    run = Run(rec, limits or Limits(), started=clock(), _clock=clock)
    bounds = _Bounds(run, found, until)

    async def bounded(value: Any) -> Any:
        if not inspect.isawaitable(value):
            return value
        left = bounds.remaining()
        if left is None:
            return await value
        try:
            return await asyncio.wait_for(value, max(left, 0.0))
        except TimeoutError:
            t = run.limits.timeout_s
            raise _Stop("forced", f"the run took longer than {t:g} s (timeout_s={t:g}); "
                        "what was running was cancelled", "timeout_s") from None

    try:
        while True:
            bounds.check_until()
            bounds.before_step()
            step = _step_of(await bounded(next_step(run)))
            run.steps += 1
            if step.say is not None:
                rec.assistant(step.say)
            outcomes: list[Outcome] = []
            for call in step.calls:
                tool = bounds.before_call(call)
                if tool is None:
                    outcomes.append(bounds.unknown(call))
                    continue
                try:
                    result = await bounded(tool(**call.args))
                except _Stop:
                    raise
                except Exception as exc:
                    outcomes.append(Outcome(call, error=exc))
                else:
                    outcomes.append(Outcome(call, result))
                bounds.check_until()
            run.last = outcomes
            if step.done:
                raise _Stop("finished", "the agent finished")
    except _Stop as stop:
        return _finish(run, bounds, stop)
    except BaseException as exc:
        _failed(run, exc)
        raise
