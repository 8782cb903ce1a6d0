"""The reviewed ledger along one trace: what held just before each event.

`Ledger.at(turn)` places every delta at its turn. A judge needs more: for the first refund
of a trace, a ledger that already lists the refund completed shows it the effect of the very
call it judges. So each delta gets an `Effect` per trace — the point between two events
where it takes effect — and `LedgerTimeline.before(seq)` is the ledger as it stood just
before the event with that seq: exactly the deltas whose effect point lies before it.

Effect points (resolved from a trace by `judge.checks.anchors`, which reads tool results):

- a delta with no anchor takes effect at the start of its turn: just before the first event
  whose turn is at least the delta's (never, if the trace ends before that turn);
- `at_seq: N`: right after seq N (events with seq > N see it);
- `after_tool` (+ `after_result`) and the default of a sub-goal's `complete`: right after the
  matching result (never, if the trace has none);
- a delta never takes effect before the previous delta of its key (the reviewed order of a
  key's deltas is kept, so every state shown is one the transition rules accepted).

A point is a number `after`: the delta is in effect for events with seq > `after` (the start
of a turn whose first event has seq s is `s - 0.5`; never is `inf`).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, replace

from judge.ledger.reducer import Ledger, LedgerSnapshot

NEVER = math.inf


@dataclass(frozen=True, slots=True)
class Effect:
    """Where one delta takes effect in one trace: for events with seq > `after`.

    `turn` is the trace turn it took effect in when that differs from the delta's own turn
    (an anchored delta; None keeps the delta's turn)."""

    after: float
    turn: int | None = None

    @property
    def never(self) -> bool:
        return self.after == NEVER


class LedgerTimeline:
    """One trace's ledger before each event (build with `judge.checks.anchors`)."""

    def __init__(self, ledger: Ledger, effects: Sequence[Effect]) -> None:
        if len(effects) != len(ledger.deltas):
            raise ValueError(f"{len(effects)} effects for {len(ledger.deltas)} deltas")
        self.ledger = ledger
        kept: list[Effect] = []
        last: dict[str, int] = {}
        for i, (d, e) in enumerate(zip(ledger.deltas, effects, strict=True)):
            j = last.get(d.key)
            if j is not None and e.after < kept[j].after:
                # never before the previous delta of the key: it takes effect with that one
                prev = kept[j]
                e = Effect(prev.after, ledger.deltas[j].turn if prev.turn is None
                           else prev.turn)
            kept.append(e)
            last[d.key] = i
        self.effects: tuple[Effect, ...] = tuple(kept)
        self._order = sorted(range(len(kept)), key=lambda i: (kept[i].after, i))
        self._points = [kept[i].after for i in self._order]
        self._since = {i: e.turn for i, e in enumerate(kept) if e.turn is not None}
        self._cache: dict[tuple[int, int], LedgerSnapshot] = {}

    def applied_before(self, seq: int) -> list[int]:
        """The indices of the deltas in effect just before the event with `seq`, in the
        order they took effect."""
        return self._order[:bisect_left(self._points, seq)]

    def before(self, seq: int, turn: int, through: int | None = None) -> LedgerSnapshot:
        """The ledger as it stood just before the event with `seq` (of `turn`); `through`
        is the seq of the last event before it (what the snapshot reflects)."""
        n = bisect_left(self._points, seq)
        snap = self._cache.get((n, turn))
        if snap is None:
            if len(self._cache) >= 4096:
                self._cache.clear()
            snap = self._cache[(n, turn)] = self.ledger.with_applied(
                self._order[:n], turn, self._since)
        return replace(snap, before_seq=seq, through_seq=through)
