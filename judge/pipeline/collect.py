"""Checks → items: run the deterministic checks on every trace and extract its judge items.

Traces, scenarios and items are stored (when there is a store) in chunks as they are
checked, so an interrupted run keeps what it has seen. A trace that cannot be read or
checked is recorded as an InputError and the others go on. Each checked trace is reported
as a `TraceChecked` record, which can cross a process boundary (judge.pipeline.checkproc).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judge.checks import CheckReport, run_checks
from judge.checks.recovery import Recovery, recovery_of
from judge.errors import InputError
from judge.items import Item, extract_items
from judge.ledger import LoadedScenario
from judge.providers.base import JudgeRequest
from judge.trace import Trace
from judge.trace.unique import TraceIds, place_of

if TYPE_CHECKING:
    from judge.store import Store

CHUNK_TRACES = 8
DETERMINISTIC_VETO = "deterministic veto"

#: renders an item's request ahead of grading (None: the grader renders it)
Prepare = Callable[[Item], JudgeRequest | None]


@dataclass(frozen=True)
class Source:
    """Traces to check against one scenario and the rubrics to grade their items under.
    `traces` is read once; a reader records the traces it cannot read in the pipeline's
    error list and skips them."""

    scenario: LoadedScenario
    traces: Iterable[Trace]
    rubrics: Sequence[str]


@dataclass
class TraceChecked:
    """One checked trace: its report, its veto (the first divergence), its items (with their
    rendered requests when prepared ahead), its events when it diverged (for the minimal
    slice of a failure cluster) and its recovery from tool errors."""

    source: int
    scenario: LoadedScenario | None  # None while crossing a process boundary
    report: CheckReport
    veto: str | None
    items: list[Item]
    requests: list[JudgeRequest | None]
    events: list[dict[str, Any]] | None = None
    recovery: Recovery | None = None  # its tool errors and how many were recovered

    @property
    def trace_id(self) -> str:
        return self.report.trace_id


OnChecked = Callable[[TraceChecked], None]


@dataclass
class Checked:
    """What checking the sources found."""

    items: list[Item] = field(default_factory=list)
    vetoes: dict[str, str] = field(default_factory=dict)  # trace id → the first divergence
    n_traces: int = 0
    errors: list[InputError] = field(default_factory=list)

    def add(self, tc: TraceChecked) -> None:
        self.n_traces += 1
        if tc.veto is not None:
            self.vetoes[tc.trace_id] = tc.veto
        self.items.extend(tc.items)


class Checker:
    """Iterates the sources trace by trace (`traces()` yields a TraceChecked each), storing
    traces and items in chunks of `chunk` traces; `prepare` renders requests ahead;
    `keep_events` keeps a diverged trace's events in its record."""

    def __init__(self, sources: Sequence[Source], store: Store | None, *,
                 errors: list[InputError] | None = None, on_checked: OnChecked | None = None,
                 prepare: Prepare | None = None, keep_events: bool = False,
                 chunk: int = CHUNK_TRACES) -> None:
        self.sources = sources
        self.store = store
        self.on_checked = on_checked
        self.prepare = prepare
        self.keep_events = keep_events
        self.chunk = chunk
        self.checked = Checked(errors=errors if errors is not None else [])
        self.ids = TraceIds()  # trace ids are unique within the input (judge.trace.unique)
        self._traces: list[Trace] = []
        self._items: list[Item] = []

    def traces(self) -> Iterator[TraceChecked]:
        """Check each trace and yield what it gave (after its veto is known). Stores as it
        goes; `checked` holds the totals."""
        for i, src in enumerate(self.sources):
            loaded = src.scenario
            if self.store is not None:
                self.store.save_scenario(loaded.scenario.id, _text(loaded), loaded.file)
            for trace in src.traces:
                file, line = place_of(trace) or ("(input)", None)
                duplicate = self.ids.add(trace.trace_id, file, line)
                if duplicate is not None:
                    self.checked.errors.append(duplicate)
                    continue
                tc = self.check(i, src, trace)
                if tc is None:
                    continue
                self.checked.add(tc)
                if self.on_checked is not None:
                    self.on_checked(tc)
                self._keep(trace, tc.items)
                yield tc
        self.flush()

    def check(self, index: int, src: Source, trace: Trace) -> TraceChecked | None:
        """One trace: its checks and items (None, with the error recorded, if it is bad)."""
        loaded = src.scenario
        try:
            report = run_checks(loaded, trace)
            items = extract_items(loaded, trace, list(src.rubrics)) if src.rubrics else []
        except InputError as exc:  # e.g. a trace of another scenario
            self.checked.errors.append(exc)
            return None
        veto = None
        if report.vetoed:
            first = report.first_divergence
            veto = first.message if first else DETERMINISTIC_VETO
        events = None
        first = report.first_divergence
        if self.keep_events and first is not None and first.seq is not None:
            events = [e.model_dump(mode="json", exclude_none=True) for e in trace.events]
        prepare = self.prepare
        requests: list[JudgeRequest | None] = [None] * len(items)
        if prepare is not None:
            requests = [prepare(it) for it in items]
        return TraceChecked(index, loaded, report, veto, items, requests, events,
                            recovery_of(trace.events))

    def run(self) -> Checked:
        """Check everything (no grading on the way)."""
        for _ in self.traces():
            pass
        return self.checked

    def _keep(self, trace: Trace, items: list[Item]) -> None:
        if self.store is None:
            return
        self._traces.append(trace)
        self._items.extend(items)
        if len(self._traces) >= self.chunk:
            self.flush()

    def flush(self) -> None:
        """Store the traces and items checked since the last flush."""
        if self.store is None:
            return
        traces, self._traces = self._traces, []
        items, self._items = self._items, []
        if traces:
            self.store.save_traces(traces)
        if items:
            self.store.save_items(items)


def _text(loaded: LoadedScenario) -> str:
    return Path(loaded.file).read_text(encoding="utf-8")
