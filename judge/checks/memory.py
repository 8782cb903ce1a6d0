"""Memory writes against the reviewed ledger: `state_write` events, and calls of the tools
the scenario lists under `rules.memory.tools` (their arguments are the stored value).

A write is checked like a tool call's arguments, against the ledger at its turn:
- **stale**: it stores a superseded value of a key (a scalar, or an item of a list the user
  corrected: "bananas" after the user said apples instead) without the value that replaced
  it: as one of the stored values, or as a phrase of a stored text, unless the text carries
  another active entry that mentions it ("allergic to bananas" states the constraint, not
  the old list). Severity by the key's sensitivity; a safety-critical key is a veto, as for a stale
  tool argument. A write holding both the old and the new value (a note of the correction)
  is left to the judge.
- **drops a constraint**: a write to a memory key whose previous write carried an active
  constraint or permission (its alias or its whole value) no longer carries it while the
  ledger still holds it. Severity by the constraint's sensitivity; never a veto by itself
  (like a summary that drops it).
A trace without memory writes reports nothing.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

from judge.checks.base import SEVERITY_OF_SENSITIVITY, Check, where
from judge.checks.context import CheckContext, remember
from judge.checks.matching import any_glob, carries, has_phrase, is_scalar, iter_scalars
from judge.ledger.reducer import Entry, LedgerSnapshot, Superseded
from judge.ledger.scenario import EntryClass, Sensitivity, Severity
from judge.trace.model import EventData, EventKind

#: memory keys whose carried constraints are remembered (then the oldest is forgotten)
MAX_MEMORY_KEYS = 10_000
_CARRIED_CLASSES = (EntryClass.CONSTRAINT, EntryClass.PERMISSION)


def write_of(ev: EventData) -> tuple[str, Any]:
    """(memory key, stored value) of a memory write: a state write's key and value, or a
    memory tool's name and arguments."""
    if ev["kind"] is EventKind.STATE_WRITE:
        return ev.get("key") or "", ev.get("value")
    return ev.get("tool") or "", ev.get("args") or {}


def _text(key: str, value: Any) -> str:
    body = value if isinstance(value, str) else json.dumps(value, default=str,
                                                           ensure_ascii=False)
    return f"{key} {body}"


def _pieces(value: Any) -> list[Any]:
    """The scalars a value is made of (a scalar is its own piece)."""
    if is_scalar(value):
        return [value]
    return list(iter_scalars(value, 1_000))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().lower() == b.strip().lower()
    return type(a) is type(b) and a == b


def _holds(value: Any, text: str, piece: Any, snap: LedgerSnapshot | None = None,
           key: str | None = None) -> bool:
    """Does the written value hold `piece`: as one of its scalars, or (a string of 3 or more
    characters) as a whole phrase of its text that no other active entry it carries accounts
    for (a note "allergic to bananas" carries the constraint about bananas: it does not
    store the old list)?"""
    if any(_same(p, piece) for p in _pieces(value)):
        return True
    if not (isinstance(piece, str) and len(piece.strip()) >= 3 and has_phrase(text, piece)):
        return False
    if snap is None:
        return True
    return not any(k != key and e.status == "active" and _mentions(e, piece)
                   and carries(text, e) for k, e in snap.entries.items())


def _mentions(entry: Entry, phrase: str) -> bool:
    texts = [*entry.aliases, *(str(p) for p in _pieces(entry.value))]
    return any(has_phrase(t, phrase) for t in texts)


def stale_pieces(s: Superseded, snap: LedgerSnapshot) -> tuple[list[Any], list[Any]]:
    """(what the supersession made obsolete, what replaced it): the old value's pieces that
    the current value lacks, and the current value's pieces the old one lacked."""
    current = snap.value(s.key)
    old, new = _pieces(s.value), _pieces(current) if current is not None else []
    gone = [p for p in old if p != "" and not any(_same(p, q) for q in new)]
    came = [q for q in new if q != "" and not any(_same(q, p) for p in old)]
    return gone, came


class MemoryWrites(Check):
    name = "memory"
    kinds = frozenset({EventKind.STATE_WRITE, EventKind.TOOL_CALL})
    severity = Severity.TASK_QUALITY

    def __init__(self, ctx: CheckContext) -> None:
        super().__init__(ctx)
        self._tools = ctx.rules.memory.tools
        self._wanted: dict[str, bool] = ctx.shared.table("memory.wanted")
        self._carried: OrderedDict[str, frozenset[str]] = OrderedDict()
        self.writes = 0

    def wants(self, tool: str) -> bool:
        found = self._wanted.get(tool)
        if found is None:
            found = remember(self._wanted, tool, any_glob(tool, self._tools))
        return found

    def on_event(self, ev: EventData, ctx: CheckContext) -> None:
        if ev["kind"] is EventKind.TOOL_CALL and not self.wants(ev.get("tool") or ""):
            return
        key, value = write_of(ev)
        self.writes += 1
        snap = ctx.ledger_at()
        text = _text(key, value)
        self._stale(ev, snap, value, text)
        self._dropped(ev, snap, key, text)

    def _stale(self, ev: EventData, snap: LedgerSnapshot, value: Any, text: str) -> None:
        for s in snap.superseded:
            gone, came = stale_pieces(s, snap)
            old = next((p for p in gone if _holds(value, text, p, snap, s.key)), None)
            if old is None or any(_holds(value, text, q) for q in came):
                continue
            sens = s.sensitivity
            cur = snap.value(s.key)
            now = f", current value {cur!r}" if cur is not None else ""
            self.fail(f"memory write {where(ev['turn'], ev['seq'])} stores {old!r}, superseded in "
                      f"`{s.key}` at turn {s.superseded_turn}{now}", key=s.key,
                      seq=ev["seq"], turn=ev["turn"], severity=SEVERITY_OF_SENSITIVITY[sens],
                      safety_critical=sens is Sensitivity.SAFETY_CRITICAL)
            return

    def _dropped(self, ev: EventData, snap: LedgerSnapshot, key: str, text: str) -> None:
        carried = frozenset(k for k, e in snap.entries.items()
                            if e.status == "active" and e.class_ in _CARRIED_CLASSES
                            and carries(text, e))
        before = self._carried.pop(key, frozenset())
        self._carried[key] = carried
        if len(self._carried) > MAX_MEMORY_KEYS:
            self._carried.popitem(last=False)
        for k in sorted(before - carried):
            entry = snap.entries.get(k)
            if entry is None or entry.status != "active":
                continue
            self.fail(f"memory write {where(ev['turn'], ev['seq'])} to `{key}` drops "
                      f"{entry.class_.value} `{k}`, which its previous write carried",
                      key=k, seq=ev["seq"], turn=ev["turn"],
                      severity=SEVERITY_OF_SENSITIVITY[entry.sensitivity],
                      safety_critical=False)

    def finish(self, ctx: CheckContext) -> None:
        if self.writes and not self.failed:
            self.passed(f"{self.writes} memory write{'s' if self.writes != 1 else ''} hold "
                        "current values and keep the constraints they carried")
