"""What an assistant reply states that nothing in the trace supports, before any judge.

A reply's claims are the ids (a token holding both a letter and a digit: `rf-1`, `HAT170`),
amounts (`$42.00`, `19.99 EUR`), dates (`2026-12-05`, `12/5/2026`) and numbers (two digits
or more: a single digit is a count more often than a fact) it contains. A claim is supported
when a tool result (its values, keys and error text) or a user message before the reply
holds it: the same id or date (case-insensitive), the same number, or for an amount the same
number or the same number of cents (`$42.00` and `paidCents: 4200`). The rest are
*unsupported*: shown to the reply judge as their own block, and reported by `reply_support`.

`reply_support` looks at the replies the scenario's judge mapping selects (`judge:` uses
`on: assistant`: the final reply by default, the last of each turn, or all). Its findings are
informational: an unsupported claim is evidence for the judge, not a verdict, and wording
alone never fails a task.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from judge.checks.base import Check, where
from judge.checks.context import CheckContext
from judge.ledger.scenario import Scenario, Severity
from judge.textview import plain
from judge.trace.model import EventData, EventKind

ClaimKind = Literal["id", "amount", "date", "number"]
#: how many ids and numbers one trace's sources may hold (beyond that, nothing is added)
MAX_SOURCE_TOKENS = 200_000
MAX_LISTED = 8
_NUM = r"\d+(?:,\d{3})*(?:\.\d+)?"
_CLAIM = re.compile(
    rf"(?P<amount>(?:[$€£¥]|\b(?:USD|EUR|GBP)\s?)\s?(?P<a1>{_NUM})"
    rf"|\b(?P<a2>{_NUM})\s?(?:USD|EUR|GBP|dollars?|euros?|pounds?)\b)"
    r"|(?P<date>\b\d{4}-\d{2}-\d{2}(?!\d)|\b\d{1,2}/\d{1,2}/\d{2,4}\b)"
    r"|(?P<time>\b\d{1,2}(?::\d{2})?\s?(?:am|pm)\b|\b\d{1,2}:\d{2}\b)"
    r"|(?P<ordinal>\b\d+(?:st|nd|rd|th)\b)"
    rf"|(?P<number>\b{_NUM}\b)"
    r"|(?P<id>\b[A-Za-z0-9]+(?:[-_./][A-Za-z0-9]+)*\b)",
    re.IGNORECASE)
_DIGITS = re.compile(r"\d+(?:\.\d+)?")
_HAS_LETTER = re.compile(r"[A-Za-z]")


@dataclass(frozen=True, slots=True)
class Claim:
    """One checkable token of a reply, as written."""

    kind: ClaimKind
    text: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "text": self.text}


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text.replace(",", ""))
    except InvalidOperation:
        return None


def claims_in(text: str) -> list[Claim]:
    """The ids, amounts, dates and numbers of `text` as a reader sees it (`textview.plain`:
    `88\u200b412` is 88412), each once, in order."""
    out: dict[tuple[str, str], Claim] = {}
    for m in _CLAIM.finditer(plain(text)):
        kind = m.lastgroup
        token = m.group(0).strip()
        claim: Claim | None = None
        if kind in ("amount", "a1", "a2"):
            claim = Claim("amount", token)
        elif kind == "date":
            claim = Claim("date", token)
        elif kind == "number":
            if len(token.replace(",", "").split(".")[0]) >= 2 or "." in token:
                claim = Claim("number", token)
        elif kind == "id" and any(c.isdigit() for c in token) and _HAS_LETTER.search(token):
            claim = Claim("id", token)
        if claim is not None:
            out.setdefault((claim.kind, claim.text.lower()), claim)
    return list(out.values())


class SourceIndex:
    """The ids and numbers held by what the agent was told: tool results and user messages
    (bounded by `MAX_SOURCE_TOKENS`)."""

    __slots__ = ("ids", "nums")

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.nums: set[Decimal] = set()

    def _room(self) -> bool:
        return len(self.ids) + len(self.nums) < MAX_SOURCE_TOKENS

    def add_text(self, text: str) -> None:
        if not text or not self._room():
            return
        text = plain(text)
        for m in _CLAIM.finditer(text):
            kind = m.lastgroup
            token = m.group(0).strip()
            if kind in ("id", "date"):
                self.ids.add(token.lower())
            amount = m.group("a1") or m.group("a2")
            if amount:
                value = _decimal(amount)
                if value is not None:
                    self.nums.add(value)
            elif kind == "number":
                value = _decimal(token)
                if value is not None:
                    self.nums.add(value)
        for d in _DIGITS.findall(text):
            value = _decimal(d)
            if value is not None:
                self.nums.add(value)

    def add_value(self, value: Any) -> None:
        """Every string (and mapping key) and number of a JSON value."""
        stack = [value]
        n = 0
        while stack and n < 10_000 and self._room():
            cur = stack.pop()
            n += 1
            if isinstance(cur, str):
                self.add_text(cur)
            elif isinstance(cur, bool) or cur is None:
                continue
            elif isinstance(cur, int | float):
                number = _decimal(repr(cur)) if isinstance(cur, float) else Decimal(cur)
                if number is not None and number.is_finite():
                    self.nums.add(number)
            elif isinstance(cur, dict):
                stack.extend(cur.values())
                stack.extend(str(k) for k in cur)
            elif isinstance(cur, list | tuple):
                stack.extend(cur)

    def add_event(self, ev: EventData) -> None:
        """Take in a user message or a tool result (other events support nothing)."""
        kind = ev["kind"]
        if kind is EventKind.USER:
            self.add_text(ev.get("text") or "")
        elif kind is EventKind.TOOL_RESULT:
            self.add_value(ev.get("result"))
            error = ev.get("error")
            if error:
                self.add_text(error)

    def supports(self, claim: Claim) -> bool:
        if claim.kind in ("id", "date"):
            return claim.text.lower() in self.ids
        m = re.search(_NUM, claim.text)
        value = _decimal(m.group(0)) if m else None
        if value is None:
            return False
        if value in self.nums:
            return True
        return claim.kind == "amount" and value * 100 in self.nums  # written in cents

    def unsupported(self, text: str) -> list[Claim]:
        return [c for c in claims_in(text) if not self.supports(c)]


Selection = Literal["final", "each_turn", "all"]


def reply_selection(scenario: Scenario) -> Selection | None:
    """Which replies the scenario's judge mapping grades (None: no reply is judged)."""
    chosen = {u.replies for u in scenario.judge if u.on == "assistant"}
    if not chosen:
        return None
    if "all" in chosen:
        return "all"
    return "each_turn" if "each_turn" in chosen else "final"


def describe(claims: list[Claim]) -> str:
    shown = ", ".join(f"{c.kind} `{c.text}`" for c in claims[:MAX_LISTED])
    more = len(claims) - MAX_LISTED
    return shown + (f" and {more} more" if more > 0 else "")


class ReplySupport(Check):
    """Claims of the judged replies that no tool result or user message before them holds."""

    name = "reply_support"
    kinds = frozenset({EventKind.USER, EventKind.TOOL_RESULT, EventKind.ASSISTANT})
    severity = Severity.INFORMATIONAL

    def __init__(self, ctx: CheckContext) -> None:
        super().__init__(ctx)
        self._mode = reply_selection(ctx.scenario)
        self._index = SourceIndex()
        self._held: tuple[EventData, list[Claim]] | None = None  # the latest reply, not reported
        self.replies = 0

    def applies(self, ctx: CheckContext) -> bool:
        return self._mode is not None

    def wants(self, tool: str) -> bool:
        return False

    def on_event(self, ev: EventData, ctx: CheckContext) -> None:
        if ev["kind"] is not EventKind.ASSISTANT:
            self._index.add_event(ev)
            return
        found = self._index.unsupported(ev.get("text") or "")
        if self._mode == "all":
            self._report(ev, found)
        else:
            self._held = (ev, found)

    def on_turn(self, turn: int, ctx: CheckContext) -> None:
        if self._mode == "each_turn" and self._held is not None:
            self._report(*self._held)
            self._held = None

    def _report(self, ev: EventData, found: list[Claim]) -> None:
        self.replies += 1
        if found:
            seq, turn = ev["seq"], ev["turn"]
            self.fail(f"reply {where(turn, seq)} states what no tool result or user "
                      f"message holds: {describe(found)}", seq=seq, turn=turn,
                      safety_critical=False)

    def finish(self, ctx: CheckContext) -> None:
        if self._held is not None:
            self._report(*self._held)
            self._held = None
        if self.replies and not self.failed:
            self.passed(f"{self.replies} judged repl{'y' if self.replies == 1 else 'ies'}: "
                        "every id, amount, date and number appears in a tool result or a "
                        "user message")
