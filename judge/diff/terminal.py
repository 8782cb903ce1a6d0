"""What a run ended with: its last write, its final state and the facts of its final reply.

- **last write**: the last call that may change state (not read-only) and whose result
  reported no error — its tool and arguments.
- **final state**: the last value each `state_write` key was given.
- **final reply**: the last assistant message, reduced to the facts it states — ids, dates,
  numbers and amounts (normalised as in `judge.diff.normalise`). Wording alone is not drift:
  "Refund rf-1 of $42.00 is confirmed" and "Done — rf-1, 42 dollars, refunded" state the same
  facts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from judge.diff.calls import Call, writes
from judge.diff.normalise import normalise
from judge.trace import Trace
from judge.trace.model import EventKind

_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b")
# a token of letters and digits, possibly joined by - or _, holding at least one digit and
# one letter: rf-1, order-17, HAT123, 8DK3LS
_ID = re.compile(r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*"
                 r"(?![\w-])")
_AMOUNT = re.compile(r"[$€£]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[$€£]?\d+(?:\.\d+)?")
_LIMIT = 20_000  # characters of a reply read for facts


def reply_facts(text: str) -> set[str]:
    """The ids, dates and numbers a reply states, normalised, as strings."""
    text = text[:_LIMIT]
    facts: set[str] = set()
    for rx in (_DATE, _ID):
        for m in rx.finditer(text):
            facts.add(m.group(0).casefold())
        text = rx.sub(" ", text)
    for m in _AMOUNT.finditer(text):
        facts.add(str(normalise(m.group(0))))
    return facts


@dataclass
class Ending:
    """What one trace ended with."""

    last_write: Call | None
    state: dict[str, Any] = field(default_factory=dict)  # key → last value written
    state_seq: dict[str, int] = field(default_factory=dict)
    reply: str | None = None
    reply_seq: int | None = None
    facts: set[str] = field(default_factory=set)


def ending_of(trace: Trace, calls: Sequence[Call]) -> Ending:
    w = writes(calls)
    end = Ending(w[-1] if w else None)
    for ev in trace.events:
        if ev.kind is EventKind.STATE_WRITE and ev.key is not None:
            end.state[ev.key] = ev.value
            end.state_seq[ev.key] = int(ev.seq or 0)
        elif ev.kind is EventKind.ASSISTANT and ev.text is not None:
            end.reply, end.reply_seq = ev.text, ev.seq
    if end.reply is not None:
        end.facts = reply_facts(end.reply)
    return end
