"""Sessions in one trace (docs/formats.md, "Sessions"): the scenario's `sessions:` plan.

A trace may record several sessions of one conversation (a user comes back the next day).
The scenario says where each begins, by turn, as it says where each delta applies:

    sessions:
      - {id: s1, first_turn: 1}
      - {id: s2, first_turn: 3}

Turn t is in the last session whose `first_turn` is at most t (turns before the first
session's `first_turn` belong to the first session). Without a plan the whole trace is one
session and nothing expires at a session boundary.

At a session boundary the ledger keeps what persists across sessions and drops what does
not: an active entry whose persistence is `turn`, `task` or `session` and whose value was set
in an earlier session is `expired` (a completed entry stays completed); an `until_replaced`
entry carries over, so the newest authorized value wins across sessions.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from judge.trace.model import MAX_SESSION_ID  # the trace's `session` field has this limit


class SessionSpec(BaseModel):
    """One session of the conversation: its id and the turn its first user message has."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=MAX_SESSION_ID)
    first_turn: int = Field(ge=0)
    description: str | None = None


@dataclass(frozen=True)
class SessionPlan:
    """Which session each turn is in (`SessionSpec`s in order; empty: one session)."""

    ids: tuple[str, ...] = ()
    first_turns: tuple[int, ...] = ()

    @classmethod
    def of(cls, specs: Sequence[SessionSpec]) -> SessionPlan:
        return cls(tuple(s.id for s in specs), tuple(s.first_turn for s in specs))

    def __bool__(self) -> bool:
        return bool(self.ids)

    def index_of(self, turn: int) -> int:
        """The position of the session holding `turn` (0 without a plan)."""
        return max(bisect_right(self.first_turns, turn) - 1, 0)

    def session_of(self, turn: int) -> str | None:
        """The id of the session holding `turn` (None without a plan)."""
        return self.ids[self.index_of(turn)] if self.ids else None

    def turns_of(self, session: str) -> tuple[int, int | None]:
        """(first turn, last turn or None for the last session) of a session id."""
        i = self.ids.index(session)
        first = self.first_turns[i] if i else 0
        last = self.first_turns[i + 1] - 1 if i + 1 < len(self.ids) else None
        return first, last

    def crosses(self, since_turn: int, turn: int) -> bool:
        """Whether `turn` lies in a later session than `since_turn`."""
        return bool(self.ids) and self.index_of(turn) > self.index_of(since_turn)
