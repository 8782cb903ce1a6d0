"""Recovery from tool errors: of a trace's failed tool calls, how many the agent recovered.

A failed call (a `tool_result` with an `error`) is **recovered** when, after it, either

- a later call to the same tool succeeds (its result carries no error) — a successful
  retry — or
- the next assistant message (before any such retry) reports the failure to the user: it
  says the action could not be done (`could not`, `unable`, `failed`, `error`, `timed out`,
  `try again`, `sorry`, …) and claims no success (`done`, `confirmed`, `successfully`,
  `completed`, `has been …ed`).

Anything else — the agent carries on as if the call had worked, or ends silently — is not
recovered. The phrase lists are a deterministic heuristic, not a judge: a report worded in
none of them counts as not recovered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from judge.trace.model import Event, EventKind

_REPORTS = re.compile(
    r"\b(?:could ?n[o']t|can ?n[o']t|cannot|unable|not able|failed|failure|error|timed? ?out|"
    r"try (?:again|later)|sorry|unfortunately|did ?n[o']t (?:go through|work)|problem|issue|"
    r"unavailable|not possible)\b", re.IGNORECASE)
_CLAIMS = re.compile(
    r"\b(?:done|confirmed|successfully|succeeded|completed|has been \w+ed|have \w+ed)\b",
    re.IGNORECASE)


def reports_failure(text: str) -> bool:
    """Does a reply tell the user something failed (and claim no success)?"""
    return _REPORTS.search(text) is not None and _CLAIMS.search(text) is None


@dataclass(frozen=True)
class Recovery:
    errors: int  # failed tool calls
    retried: int  # ... followed by a successful call to the same tool
    reported: int  # ... not retried, but reported to the user in the next reply

    @property
    def recovered(self) -> int:
        return self.retried + self.reported


def recovery_of(events: Iterable[Event]) -> Recovery:
    errors = retried = reported = 0
    waiting: list[tuple[str, bool]] = []  # unresolved failures: (tool, next reply not seen)
    for ev in events:
        if ev.kind is EventKind.TOOL_RESULT:
            tool = ev.tool or ""
            if ev.error is not None:
                errors += 1
                waiting.append((tool, True))
                continue
            retried += sum(1 for t, _ in waiting if t == tool)
            waiting = [w for w in waiting if w[0] != tool]
        elif ev.kind is EventKind.ASSISTANT and waiting:
            if reports_failure(ev.text or ""):
                reported += sum(1 for _, fresh in waiting if fresh)
                waiting = [w for w in waiting if not w[1]]
            waiting = [(t, False) for t, _ in waiting]  # only the next reply may report
    return Recovery(errors, retried, reported)
