"""Reduce a scenario's reviewed deltas to the ledger at each turn, enforcing the
transition rules of formats §2. A fixture that breaks a rule is rejected naming the delta.

`Ledger.at(turn)` is the reviewed ledger after a turn's deltas (what the checks read).
`Ledger.with_applied(...)` is the ledger after any per-key prefix of the deltas, as one
trace reached it (what a judge reads: see `judge.ledger.timeline`). Both come from the
same single reduction, so a delta means the same thing in either.

With the scenario's `sessions:` (judge.ledger.sessions) the reduction is session-aware: at
the first turn of a later session every active entry of persistence `turn`, `task` or
`session` set in an earlier session expires, and `until_replaced` entries carry over. So a
session-scoped value never survives into the next session (a `supersede` of it there is
refused: it is no longer active; `set` it again), and a cross-session value is replaced only
by a later delta the transition rules accept (the newest authorized value wins).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from judge.errors import LedgerError
from judge.ledger.scenario import Delta, EntryClass, Op, Persistence, Sensitivity, Source
from judge.ledger.sessions import SessionPlan, SessionSpec

AUTHORITY_CLASSES = frozenset({EntryClass.GOAL, EntryClass.CONSTRAINT, EntryClass.PERMISSION})


@dataclass(frozen=True, slots=True)
class Entry:
    """The current state of one ledger key."""

    key: str
    value: Any
    class_: EntryClass
    persistence: Persistence
    sensitivity: Sensitivity
    source: Source
    since_turn: int
    status: str = "active"  # active | completed | revoked | failed | expired
    aliases: tuple[str, ...] = ()
    session: str | None = None  # the session of `since_turn` (scenarios with `sessions:`)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "key": self.key, "value": self.value, "class": self.class_.value,
            "persistence": self.persistence.value, "sensitivity": self.sensitivity.value,
            "source": self.source.value, "since_turn": self.since_turn, "status": self.status,
            "aliases": list(self.aliases),
        }
        if self.session is not None:
            out["session"] = self.session
        return out

    @property
    def cross_session(self) -> bool:
        """Whether the entry persists into later sessions (`until_replaced`)."""
        return self.persistence is Persistence.UNTIL_REPLACED


@dataclass(frozen=True, slots=True)
class Superseded:
    """A value that was replaced; it stays visible so stale uses can be caught."""

    key: str
    value: Any
    set_turn: int
    superseded_turn: int
    class_: EntryClass
    sensitivity: Sensitivity

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value, "set_turn": self.set_turn,
                "superseded_turn": self.superseded_turn, "class": self.class_.value,
                "sensitivity": self.sensitivity.value}


@dataclass(frozen=True)
class LedgerSnapshot:
    """The reviewed ledger as it holds at one turn."""

    turn: int
    entries: dict[str, Entry]  # every key ever seen, in its latest state
    superseded: tuple[Superseded, ...]
    deltas: tuple[Delta, ...] = ()  # the deltas applied at exactly this turn
    #: for a snapshot of one trace (`LedgerTimeline.before`): the seq of the event it is
    #: taken before, and the seq of the last event it reflects (None: no event before)
    before_seq: int | None = None
    through_seq: int | None = None
    session: str | None = None  # the session `turn` is in (scenarios with `sessions:`)

    @property
    def active(self) -> dict[str, Entry]:
        return {k: e for k, e in self.entries.items() if e.status == "active"}

    @property
    def completed(self) -> dict[str, Entry]:
        return {k: e for k, e in self.entries.items() if e.status == "completed"}

    def value(self, key: str, default: Any = None) -> Any:
        e = self.entries.get(key)
        return e.value if e is not None and e.status in ("active", "completed") else default

    def is_active(self, key: str) -> bool:
        e = self.entries.get(key)
        return e is not None and e.status == "active"

    def superseded_values(self, key: str | None = None) -> list[Superseded]:
        return [s for s in self.superseded if key is None or s.key == key]

    def keys(self) -> set[str]:
        return set(self.entries)

    def to_dict(self) -> dict[str, Any]:
        by_status: dict[str, list[dict[str, Any]]] = {
            "active": [], "completed": [], "revoked": [], "failed": [], "expired": []}
        for e in self.entries.values():
            by_status[e.status].append(e.to_dict())
        out: dict[str, Any] = {"turn": self.turn, **by_status,
                               "superseded": [s.to_dict() for s in self.superseded]}
        if self.session is not None:
            out["session"] = self.session
        if self.before_seq is not None:
            out["before_seq"] = self.before_seq
            out["through_seq"] = self.through_seq
        return out


@dataclass(frozen=True, slots=True)
class DeltaEffect:
    """What one delta did in the reviewed reduction: its key's entry right after it, and the
    superseded record it created (a `supersede` only)."""

    entry: Entry
    superseded: Superseded | None = None


@dataclass
class Ledger:
    """All snapshots of a scenario's ledger; build with `Ledger.reduce`."""

    deltas: list[Delta]
    _turns: list[int] = field(default_factory=list)
    _snapshots: list[LedgerSnapshot] = field(default_factory=list)
    #: per delta (in list order): what it did (`with_applied` rebuilds any prefix from these)
    effects: list[DeltaEffect] = field(default_factory=list)
    _key_order: dict[str, int] = field(default_factory=dict)
    #: which session each turn is in (empty: one session)
    plan: SessionPlan = field(default_factory=SessionPlan)

    @classmethod
    def reduce(cls, deltas: list[Delta], file: str | None = None,
               sessions: SessionPlan | list[SessionSpec] | None = None) -> Ledger:
        plan = sessions if isinstance(sessions, SessionPlan) else SessionPlan.of(sessions or [])
        ledger = cls(list(deltas), plan=plan)
        entries: dict[str, Entry] = {}
        superseded: list[Superseded] = []
        last_turn = -1
        by_turn: dict[int, list[Delta]] = {}
        for i, d in enumerate(deltas):
            where = f"ledger[{i}]"
            if d.turn < last_turn:
                raise LedgerError(
                    f"delta at turn {d.turn} comes after a delta at turn {last_turn}; "
                    "deltas must be in turn order", file=file, path=where, field="turn")
            if d.turn > last_turn and last_turn >= 0:
                ledger._record(last_turn, entries, superseded, by_turn.get(last_turn, []))
                _expire(entries, d.turn, plan)
            last_turn = d.turn
            _check_session(d, plan, file, where)
            n_superseded = len(superseded)
            _apply(d, entries, superseded, file, where, plan.session_of(d.turn))
            ledger.effects.append(DeltaEffect(
                entries[d.key], superseded[-1] if len(superseded) > n_superseded else None))
            ledger._key_order.setdefault(d.key, len(ledger._key_order))
            by_turn.setdefault(d.turn, []).append(d)
        if last_turn >= 0:
            ledger._record(last_turn, entries, superseded, by_turn.get(last_turn, []))
        return ledger

    def _record(self, turn: int, entries: dict[str, Entry], superseded: list[Superseded],
                deltas: list[Delta]) -> None:
        self._turns.append(turn)
        self._snapshots.append(LedgerSnapshot(turn, dict(entries), tuple(superseded),
                                              tuple(deltas),
                                              session=self.plan.session_of(turn)))

    def at(self, turn: int) -> LedgerSnapshot:
        """The ledger as it holds at `turn` (after that turn's deltas; with sessions, as the
        session holding `turn` sees it)."""
        session = self.plan.session_of(turn)
        i = bisect_right(self._turns, turn) - 1
        if i < 0:
            return LedgerSnapshot(turn, {}, (), session=session)
        snap = self._snapshots[i]
        entries = dict(snap.entries)
        _expire(entries, turn, self.plan)
        deltas = snap.deltas if snap.turn == turn else ()
        return LedgerSnapshot(turn, entries, snap.superseded, deltas, session=session)

    def keys(self) -> set[str]:
        return {d.key for d in self.deltas}

    def turns(self) -> list[int]:
        return list(self._turns)

    def with_applied(self, applied: Sequence[int], turn: int,
                     since: Mapping[int, int] | None = None) -> LedgerSnapshot:
        """The ledger after the deltas `applied` (indices into `deltas`, in the order they
        took effect), as it holds at `turn` (turn-persistent entries expire after their
        turn).

        Every key's applied deltas must be a prefix of that key's deltas (a delta never
        takes effect before the previous delta of its key): a key's state is then the state
        the reviewed reduction reached after the last of them, so each is one the transition
        rules accepted. `since` gives, per delta index, the turn it took effect in the trace
        (shown as the entry's `since_turn`; default: the delta's own turn).
        """
        last: dict[str, int] = {}
        superseded: list[Superseded] = []
        for i in applied:
            d = self.deltas[i]
            prev = last.get(d.key)
            if prev is not None and prev > i:
                raise ValueError(f"delta {i} of '{d.key}' applied after delta {prev}")
            effect = self.effects[i]
            if effect.superseded is not None:
                old = effect.superseded
                if since:
                    set_at = since.get(prev) if prev is not None else None
                    old = replace(old, set_turn=old.set_turn if set_at is None else set_at,
                                  superseded_turn=since.get(i, old.superseded_turn))
                superseded.append(old)
            last[d.key] = i
        entries: dict[str, Entry] = {}
        plan = self.plan
        for key in sorted(last, key=self._key_order.__getitem__):
            i = last[key]
            entry = self.effects[i].entry
            when = since.get(i) if since else None
            entries[key] = entry if when is None else replace(
                entry, since_turn=when, session=plan.session_of(when))
        _expire(entries, turn, plan)
        return LedgerSnapshot(turn, entries, tuple(superseded), session=plan.session_of(turn))


def _expire(entries: dict[str, Entry], turn: int, plan: SessionPlan) -> None:
    """Expire what no longer holds at `turn`: a turn-scoped entry after its turn, and (with
    sessions) every entry that does not persist across sessions once a later one began."""
    for k, e in list(entries.items()):
        if e.status != "active":
            continue
        if (e.persistence is Persistence.TURN and e.since_turn < turn) or (
                plan and e.persistence is not Persistence.UNTIL_REPLACED
                and plan.crosses(e.since_turn, turn)):
            entries[k] = replace(e, status="expired")


def expired_by_session(entry: Entry, turn: int, plan: SessionPlan) -> bool:
    """Whether an expired entry expired because its session ended before `turn` (not only
    because its turn did)."""
    return (entry.status == "expired" and entry.persistence in _SESSION_BOUND
            and plan.crosses(entry.since_turn, turn))


_SESSION_BOUND = frozenset({Persistence.TASK, Persistence.SESSION})


def _check_session(d: Delta, plan: SessionPlan, file: str | None, where: str) -> None:
    """A delta that names its session must name the one its turn is in."""
    if d.session is None:
        return
    if not plan:
        raise LedgerError(f"{d.op.value} of '{d.key}' at turn {d.turn} names session "
                          f"'{d.session}', but the scenario lists no sessions (sessions:)",
                          file=file, path=where, field="session")
    if d.session not in plan.ids:
        raise LedgerError(f"{d.op.value} of '{d.key}' at turn {d.turn}: no session "
                          f"'{d.session}' in sessions: ({', '.join(plan.ids)})",
                          file=file, path=where, field="session")
    actual = plan.session_of(d.turn)
    if actual != d.session:
        raise LedgerError(f"{d.op.value} of '{d.key}' at turn {d.turn} says session "
                          f"'{d.session}', but turn {d.turn} is in session '{actual}' "
                          "(sessions:)", file=file, path=where, field="session")


def _apply(d: Delta, entries: dict[str, Entry], superseded: list[Superseded],
           file: str | None, where: str, session: str | None = None) -> None:
    def fail(msg: str, fld: str | None = None) -> LedgerError:
        return LedgerError(f"{d.op.value} of '{d.key}' at turn {d.turn}: {msg}",
                           file=file, path=where, field=fld)

    prev = entries.get(d.key)
    if prev is None:
        if d.op not in (Op.SET, Op.COMPLETE):
            raise fail(f"key '{d.key}' has not been set; the first delta of a key must be "
                       "'set' or 'complete'", "op")
        missing = [n for n, v in (("class", d.class_), ("persistence", d.persistence),
                                  ("sensitivity", d.sensitivity)) if v is None]
        if missing:
            raise fail(f"the first delta of a key must give {', '.join(missing)}", missing[0])
        assert d.class_ and d.persistence and d.sensitivity
        cls_, pers, sens = d.class_, d.persistence, d.sensitivity
    else:
        if d.class_ is not None and d.class_ is not prev.class_:
            raise fail(f"class changes from {prev.class_.value} to {d.class_.value}; "
                       "a key keeps its class", "class")
        cls_ = prev.class_
        pers = d.persistence or prev.persistence
        sens = d.sensitivity or prev.sensitivity
    _check_authority(d, cls_, fail)

    aliases = tuple(d.aliases) or (prev.aliases if prev else ())
    if d.op is Op.SET:
        if prev is not None and prev.status in ("active", "completed"):
            raise fail(f"key is already {prev.status} since turn {prev.since_turn}; "
                       "use 'supersede' for a new value or 'fail' to roll back", "op")
        entries[d.key] = Entry(d.key, d.value, cls_, pers, sens, d.source, d.turn,
                               "active", aliases, session)
    elif d.op is Op.SUPERSEDE:
        assert prev is not None
        if prev.status == "completed":
            raise fail("a completed key stays completed unless a 'fail' delta rolls it back",
                       "op")
        if prev.status != "active":
            raise fail(f"only an active key can be superseded (it is {prev.status})", "op")
        if d.value is None:
            raise fail("supersede needs the new value", "value")
        superseded.append(Superseded(d.key, prev.value, prev.since_turn, d.turn, cls_, sens))
        entries[d.key] = Entry(d.key, d.value, cls_, pers, sens, d.source, d.turn,
                               "active", aliases, session)
    elif d.op is Op.COMPLETE:
        if prev is not None and prev.status == "completed":
            raise fail(f"already completed at turn {prev.since_turn}", "op")
        if cls_ not in (EntryClass.COMPLETION, EntryClass.GOAL):
            raise fail(f"only goal and completion keys complete (this is a {cls_.value})",
                       "op")
        value = d.value if d.value is not None else (prev.value if prev else None)
        entries[d.key] = Entry(d.key, value, cls_, pers, sens, d.source, d.turn,
                               "completed", aliases, session)
    elif d.op is Op.REVOKE:
        assert prev is not None
        if prev.status not in ("active", "completed"):
            raise fail(f"only an active key can be revoked (it is {prev.status})", "op")
        entries[d.key] = replace(prev, status="revoked", since_turn=d.turn, source=d.source,
                                 session=session)
    elif d.op is Op.FAIL:
        assert prev is not None
        if prev.status not in ("active", "completed"):
            raise fail(f"only an active or completed key can fail (it is {prev.status})", "op")
        value = d.value if d.value is not None else prev.value
        entries[d.key] = replace(prev, value=value, status="failed", since_turn=d.turn,
                                 source=d.source, session=session)


def _check_authority(d: Delta, cls_: EntryClass, fail: Any) -> None:
    """Only a user grants authority; tools and the agent may only touch facts."""
    if d.source is Source.USER:
        return
    if cls_ is EntryClass.PERMISSION and d.op in (Op.SET, Op.SUPERSEDE):
        raise fail(f"only a user source may grant or expand a permission "
                   f"(source is {d.source.value})", "source")
    if cls_ in (EntryClass.CONSTRAINT, EntryClass.PERMISSION) and d.op is Op.REVOKE:
        raise fail(f"only a user source may revoke a {cls_.value} "
                   f"(source is {d.source.value})", "source")
    if cls_ in AUTHORITY_CLASSES and d.op in (Op.SET, Op.SUPERSEDE):
        who = "a tool result" if d.source is Source.TOOL else "the agent"
        raise fail(f"{who} may update a fact but never sets or changes a {cls_.value}",
                   "source")
