"""Lossless or loud: what an import carried over, and everything it left out, and why.

An importer hands every problem it meets with one span, record or message to its
`ImportLog` instead of raising: with `strict=True` (the library's default, and
`judge import --strict`) the problem is raised as the file's InputError, as before; without,
it becomes a `Note` naming where (span / run / record / message id), the field and what was
done (`skipped`: that span or message is left out; `ignored`: one field of it is; `repaired`:
a value was made writable, e.g. a lone surrogate replaced by U+FFFD; `renamed`: a duplicate
trace id made unique; `kept`: a duplicate kept twice because its copies differ), and the
import goes on, so one odd span never costs the other thousand.

What the source holds and the trace format deliberately keeps out (system prompts, the
model's private reasoning, status events of a session log) is counted under `omitted`, not
noted one by one. The writer counts what it wrote (`traces`, `events` by kind); a trace with
no event is not written and is noted. `judge import` prints `summary()` on stderr and
`--report FILE` writes `to_json()`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from judge.errors import InputError

ACTIONS = ("skipped", "ignored", "repaired", "renamed", "kept")
#: notes printed on stderr; the report file lists them all
SHOWN_NOTES = 20


@dataclass
class Note:
    """One thing an import left out or changed."""

    message: str
    where: str | None = None
    field: str | None = None
    line: int | None = None
    action: str = "skipped"

    def text(self) -> str:
        parts = [f"line {self.line}"] if self.line is not None else []
        if self.where:
            parts.append(self.where)
        if self.field:
            parts.append(f"field '{self.field}'")
        return ": ".join([*parts, f"{self.message} ({self.action})"])


@dataclass
class ImportLog:
    """What one file's import did (see the module docstring)."""

    file: str
    format: str | None = None
    strict: bool = True
    notes: list[Note] = field(default_factory=list)
    traces: int = 0
    events: Counter[str] = field(default_factory=Counter)
    source: Counter[str] = field(default_factory=Counter)
    omitted: Counter[str] = field(default_factory=Counter)
    output: str | None = None

    def problem(self, message: str, *, where: str | None = None, fld: str | None = None,
                line: int | None = None, action: str = "skipped") -> None:
        """A problem with one part of the input: raised when strict, else noted."""
        if self.strict:
            raise InputError(message, file=self.file, line=line, path=where, field=fld)
        self.notes.append(Note(message, where, fld, line, action))

    def error(self, exc: InputError, *, where: str | None = None,
              action: str = "skipped") -> None:
        """An InputError about one part of the input (see `problem`)."""
        if self.strict:
            raise exc
        # the error's own text, without the file name (the report names the file once)
        text = exc.message
        if exc.file:
            prefix = exc.file.encode("utf-8", "backslashreplace").decode("utf-8")
            prefix += f":{exc.line}" if exc.line is not None else ""
            if text.startswith(prefix + ": "):
                text = text[len(prefix) + 2:]
        self.notes.append(Note(_own_message(exc, text), where or exc.path, exc.field,
                               exc.line, action))

    def note(self, message: str, *, where: str | None = None, fld: str | None = None,
             line: int | None = None, action: str = "kept") -> None:
        """Something worth saying that never refuses the file (even when strict)."""
        self.notes.append(Note(message, where, fld, line, action))

    def omit(self, what: str, n: int = 1) -> None:
        self.omitted[what] += n

    # -- output --------------------------------------------------------------------------------
    def n_events(self) -> int:
        return sum(self.events.values())

    def summary(self) -> list[str]:
        """Lines for stderr: what was written, then what was left out."""
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.events.items()))
        lines = [f"{self.n_events()} event(s) ({kinds or 'none'})"]
        if self.omitted:
            lines.append("kept out of the events: " + ", ".join(
                f"{what} {n}" for what, n in sorted(self.omitted.items())))
        if self.notes:
            by_action = Counter(n.action for n in self.notes)
            lines.append("problems: " + ", ".join(f"{a} {by_action[a]}" for a in ACTIONS
                                                  if by_action[a]))
            lines.extend(f"  {n.text()}" for n in self.notes[:SHOWN_NOTES])
            if len(self.notes) > SHOWN_NOTES:
                lines.append(f"  ... and {len(self.notes) - SHOWN_NOTES} more "
                             "(--report FILE lists every one)")
        return lines

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "format": self.format, "output": self.output,
                "strict": self.strict, "traces": self.traces,
                "events": dict(sorted(self.events.items())), "n_events": self.n_events(),
                "source": dict(sorted(self.source.items())),
                "omitted": dict(sorted(self.omitted.items())),
                "notes": [asdict(n) for n in self.notes]}


def _own_message(exc: InputError, text: str) -> str:
    """The message of an InputError without its path and field parts."""
    for part in (exc.path, f"field '{exc.field}'" if exc.field else None):
        if part and text.startswith(part + ": "):
            text = text[len(part) + 2:]
    return text
