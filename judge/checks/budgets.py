"""Budgets: steps (tool calls), identical calls (duplicate execution), reads after completion.

All three are `costly`, never a veto: they waste money and time but decide nothing alone.
Identical calls are counted by a hash of the canonical call (tool + sorted args), so memory
grows with the number of *distinct* calls only, and at most `MAX_DISTINCT_CALLS` of those
are remembered (the oldest is forgotten first; a repeat that far apart is not counted).
A read is a call to a tool in `read_tools` (or, when that list is empty, any tool not in
`mutating_tools`).
"""

from __future__ import annotations

from judge.checks.base import Check, where_of
from judge.checks.context import CheckContext, remember
from judge.checks.matching import any_glob, canonical_call
from judge.ledger.scenario import Severity
from judge.trace.model import EventData, EventKind

MAX_DISTINCT_CALLS = 200_000


class Budgets(Check):
    name = "budget"
    kinds = frozenset({EventKind.TOOL_CALL})
    severity = Severity.COSTLY

    def __init__(self, ctx: CheckContext) -> None:
        super().__init__(ctx)
        self.steps = 0
        self.reads_after = 0
        self.counts: dict[int, int] = {}
        b = ctx.rules.budgets
        self._max_steps = b.max_steps
        self._max_identical = b.max_identical_calls
        self._max_reads = b.max_reads_after_completion
        self._exempt_globs = b.identical_exempt
        self._exempt: dict[str, bool] = ctx.shared.table("budget.exempt")
        self._read: dict[str, bool] = ctx.shared.table("budget.read")

    def applies(self, ctx: CheckContext) -> bool:
        b = ctx.rules.budgets
        return (b.max_steps is not None or b.max_identical_calls is not None
                or b.max_reads_after_completion is not None)

    def on_event(self, ev: EventData, ctx: CheckContext) -> None:
        tool = ev.get("tool") or ""
        self.steps += 1
        limit = self._max_steps
        if limit is not None and self.steps == limit + 1:
            self.fail(f"step budget of {limit} tool calls exceeded by `{tool}` "
                      f"{where_of(ev)}", seq=ev["seq"], turn=ev["turn"])
        limit = self._max_identical
        if limit is not None:
            exempt = self._exempt.get(tool)
            if exempt is None:
                exempt = remember(self._exempt, tool, any_glob(tool, self._exempt_globs))
            if not exempt:
                h = canonical_call(tool, ev.get("args"))
                counts = self.counts
                n = counts.get(h, 0) + 1
                counts[h] = n
                if n == 1 and len(counts) > MAX_DISTINCT_CALLS:
                    del counts[next(iter(counts))]  # forget the oldest distinct call
                if n == limit + 1:
                    self.fail(f"identical `{tool}` call repeated {n} times (budget "
                              f"{limit}) {where_of(ev)}",
                              seq=ev["seq"], turn=ev["turn"])
        limit = self._max_reads
        if limit is not None and ctx.complete_at is not None and self._is_read(tool, ctx):
            self.reads_after += 1
            if self.reads_after == limit + 1:
                self.fail(f"{self.reads_after} reads after completion (budget "
                          f"{limit}), `{tool}` "
                          f"{where_of(ev)}", seq=ev["seq"], turn=ev["turn"])

    def _is_read(self, tool: str, ctx: CheckContext) -> bool:
        read = self._read.get(tool)
        if read is None:
            if ctx.rules.read_tools:
                read = any_glob(tool, ctx.rules.read_tools)
            else:
                read = not any_glob(tool, ctx.rules.mutating_tools)
            remember(self._read, tool, read)
        return read

    def pass_message(self, ctx: CheckContext) -> str:
        return f"within budgets ({self.steps} tool calls)"
