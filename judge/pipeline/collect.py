"""Checks → items: run the deterministic checks on every trace and extract its judge items.

Traces, scenarios and items are stored (when there is a store) in chunks as they are
checked, so an interrupted run keeps what it has seen. A trace that cannot be read or
checked is recorded as an InputError and the others go on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from judge.checks import CheckReport, run_checks
from judge.errors import InputError
from judge.items import Item, extract_items
from judge.ledger import LoadedScenario
from judge.trace import Trace

if TYPE_CHECKING:
    from judge.store import Store

CHUNK_TRACES = 8
DETERMINISTIC_VETO = "deterministic veto"

OnChecked = Callable[[LoadedScenario, Trace, CheckReport], None]


@dataclass(frozen=True)
class Source:
    """Traces to check against one scenario and the rubrics to grade their items under.
    `traces` is read once; a reader records the traces it cannot read in the pipeline's
    error list and skips them."""

    scenario: LoadedScenario
    traces: Iterable[Trace]
    rubrics: Sequence[str]


@dataclass
class Checked:
    """What checking the sources found."""

    items: list[Item] = field(default_factory=list)
    vetoes: dict[str, str] = field(default_factory=dict)  # trace id → the first divergence
    n_traces: int = 0
    errors: list[InputError] = field(default_factory=list)

    @property
    def safety(self) -> dict[str, bool]:
        return {it.item_id: it.safety_critical for it in self.items}


class Checker:
    """Iterates the sources trace by trace (`traces()` yields each trace's items), storing
    traces and items in chunks of `chunk` traces."""

    def __init__(self, sources: Iterable[Source], store: Store | None, *,
                 errors: list[InputError] | None = None, on_checked: OnChecked | None = None,
                 chunk: int = CHUNK_TRACES) -> None:
        self.sources = sources
        self.store = store
        self.on_checked = on_checked
        self.chunk = chunk
        self.checked = Checked(errors=errors if errors is not None else [])
        self._traces: list[Trace] = []
        self._items: list[Item] = []

    def traces(self) -> Iterator[list[Item]]:
        """Check each trace; yield its items (after its veto is known). Stores as it goes."""
        out = self.checked
        for src in self.sources:
            loaded = src.scenario
            if self.store is not None:
                self.store.save_scenario(loaded.scenario.id, _text(loaded), loaded.file)
            for trace in src.traces:
                try:
                    report = run_checks(loaded, trace)
                    items = extract_items(loaded, trace, list(src.rubrics)) \
                        if src.rubrics else []
                except InputError as exc:  # e.g. a trace of another scenario
                    out.errors.append(exc)
                    continue
                out.n_traces += 1
                if report.vetoed:
                    first = report.first_divergence
                    out.vetoes[trace.trace_id] = first.message if first else DETERMINISTIC_VETO
                if self.on_checked is not None:
                    self.on_checked(loaded, trace, report)
                out.items.extend(items)
                self._keep(trace, items)
                yield items
        self.flush()

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
