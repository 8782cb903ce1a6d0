"""Pydantic models of a trace and its events (formats §1)."""

from __future__ import annotations

from enum import StrEnum
from operator import itemgetter
from typing import Any, Literal, Required, TypedDict, cast

from pydantic import BaseModel, ConfigDict, Field, model_validator


class EventKind(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    STATE_WRITE = "state_write"
    SUMMARY = "summary"
    STATE_SNAPSHOT = "state_snapshot"  # an extension (docs/formats.md): the world's state

    @classmethod
    def _missing_(cls, value: object) -> EventKind | None:
        """Accept the hyphenated aliases (`tool-call`, ...); pydantic-core honours this."""
        alias = KIND_ALIASES.get(value) if isinstance(value, str) else None
        return cls(alias) if alias is not None else None


KIND_ALIASES: dict[str, str] = {
    "tool-call": "tool_call",
    "tool-result": "tool_result",
    "state-write": "state_write",
    "state-snapshot": "state_snapshot",
}

# Fields each kind requires and the fields it may carry.
REQUIRED_FIELDS: dict[EventKind, tuple[str, ...]] = {
    EventKind.USER: ("text",),
    EventKind.ASSISTANT: ("text",),
    EventKind.TOOL_CALL: ("tool", "args"),
    EventKind.TOOL_RESULT: ("tool",),
    EventKind.STATE_WRITE: ("key",),
    EventKind.SUMMARY: ("text",),
    EventKind.STATE_SNAPSHOT: ("state",),
}
ALLOWED_FIELDS: dict[EventKind, frozenset[str]] = {
    EventKind.USER: frozenset({"text"}),
    EventKind.ASSISTANT: frozenset({"text"}),
    EventKind.TOOL_CALL: frozenset({"tool", "args", "call_id"}),
    EventKind.TOOL_RESULT: frozenset({"tool", "call_id", "result", "error"}),
    EventKind.STATE_WRITE: frozenset({"key", "value"}),
    EventKind.SUMMARY: frozenset({"text", "reason"}),
    EventKind.STATE_SNAPSHOT: frozenset({"state", "phase"}),
}
#: fields any event may carry; `session` is an extension (docs/formats.md, "Sessions"): the
#: session of the conversation the event belongs to (absent: the scenario's sessions by turn)
_COMMON = frozenset({"seq", "turn", "kind", "session", "metadata"})
#: the longest session id an event may carry
MAX_SESSION_ID = 200
_ALLOWED_ALL: dict[EventKind, frozenset[str]] = {k: _COMMON | v for k, v in ALLOWED_FIELDS.items()}


class Event(BaseModel):
    """One event of a trace. `seq` and `turn` are filled by the loader when absent."""

    model_config = ConfigDict(extra="forbid")

    seq: int | None = Field(default=None, ge=1)
    turn: int | None = Field(default=None, ge=0)
    kind: EventKind
    text: str | None = None
    tool: str | None = None
    args: dict[str, Any] | None = None
    call_id: str | None = None
    result: Any = None
    error: str | None = None
    key: str | None = None
    value: Any = None
    reason: str | None = None
    # state_snapshot: `{collection: {record_id: record}}`; `phase`: taken at the start or
    # the end of the run (absent: wherever the event stands)
    state: dict[str, dict[str, Any]] | None = None
    phase: Literal["start", "end"] | None = None
    session: str | None = Field(default=None, min_length=1, max_length=MAX_SESSION_ID)
    metadata: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _kind_fields(self) -> Event:
        """Each kind carries its own fields: no foreign ones, none of its required missing.

        An after-validator (not a before one) so the JSON fast path stays in pydantic-core;
        `model_fields_set` holds exactly the fields the input gave, null or not.
        """
        k = self.kind
        extra = self.model_fields_set - _ALLOWED_ALL[k]
        if extra:
            raise ValueError(f"field '{sorted(extra)[0]}' is not allowed on a {k.value} event")
        for name in REQUIRED_FIELDS[k]:
            if getattr(self, name) is None:
                raise ValueError(f"field '{name}' is required on a {k.value} event")
        return self

    @property
    def failed(self) -> bool:
        """A tool result that reports an error (failed or timed out)."""
        return self.kind is EventKind.TOOL_RESULT and self.error is not None

    def at(self) -> str:
        return f"turn {self.turn} (seq {self.seq})"


class EventData(TypedDict, total=False):
    """An event as the checks read it: a plain dict, cheaper to build and to read than an
    `Event` (`judge.trace.fast` builds it from JSON with the same rules). It holds the
    fields the input gave, and `seq` and `turn`, filled; `vars(event)` of a validated
    `Event` is one too (with every field)."""

    seq: Required[int | None]
    turn: Required[int | None]
    kind: Required[EventKind]
    text: str | None
    tool: str | None
    args: dict[str, Any] | None
    call_id: str | None
    result: Any
    error: str | None
    key: str | None
    value: Any
    reason: str | None
    state: dict[str, dict[str, Any]] | None
    phase: str | None
    session: str | None
    metadata: dict[str, Any] | None


class TraceHeader(BaseModel):
    """Everything about a trace except its events."""

    model_config = ConfigDict(extra="forbid")

    trace_id: str = Field(min_length=1)
    scenario: str | None = None
    candidate: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)


class Trace(TraceHeader):
    """One run of an agent on one task. Events have `seq` and `turn` filled in."""

    events: list[Event]

    @model_validator(mode="after")
    def _fill_and_check(self) -> Trace:
        fill_positions(self.events)
        return self

    def by_seq(self) -> dict[int, Event]:
        return {e.seq: e for e in self.events if e.seq is not None}


def fill_positions(events: list[Event]) -> None:
    """Apply the `seq`/`turn` defaults of formats §1 and require strictly increasing `seq`."""
    seqs = [ev.seq for ev in events]
    if None not in seqs and None not in [ev.turn for ev in events]:
        given = cast(list[int], seqs)
        if given == sorted(set(given)):
            return  # every position given, seq strictly increasing: nothing to fill or refuse
    state = PositionState()
    for i, ev in enumerate(events):
        state.fill(ev, i)


_SEQ, _TURN = itemgetter("seq"), itemgetter("turn")


def fill_data_positions(events: list[dict[str, Any]]) -> None:
    """`fill_positions` for events as dicts (`EventData` without `seq`/`turn` maybe)."""
    try:
        seqs = list(map(_SEQ, events))
        complete = None not in seqs and None not in map(_TURN, events)
    except KeyError:  # a position not given
        complete = False
    if complete and seqs == sorted(set(seqs)):
        return
    state = PositionState()
    for i, ev in enumerate(events):
        state.fill_data(ev, i)


class PositionState:
    """Incremental `seq`/`turn` defaulting, usable on a stream of events."""

    __slots__ = ("last_seq", "position", "users")

    def __init__(self) -> None:
        self.last_seq = 0
        self.users = 0
        self.position = 0

    def fill(self, ev: Event, index: int | None = None) -> None:
        self.position += 1
        if ev.kind is EventKind.USER:
            self.users += 1
        if ev.seq is None:
            ev.seq = self.position
        self._check(ev.seq, index)
        if ev.turn is None:
            ev.turn = self.users

    def fill_data(self, ev: dict[str, Any], index: int | None = None) -> None:
        """`fill` for an event as a dict."""
        self.position += 1
        if ev["kind"] is EventKind.USER:
            self.users += 1
        seq = ev.get("seq")
        if seq is None:
            seq = ev["seq"] = self.position
        self._check(seq, index)
        if ev.get("turn") is None:
            ev["turn"] = self.users

    def _check(self, seq: int, index: int | None) -> None:
        if seq <= self.last_seq:
            where = f"events[{index}].seq" if index is not None else "seq"
            word = "duplicate" if seq == self.last_seq else "decreasing"
            raise ValueError(f"{where}: {word} seq {seq} (after {self.last_seq})")
        self.last_seq = seq
