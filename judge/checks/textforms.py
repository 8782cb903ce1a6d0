"""How the checks find a value in text: one normalisation for every check that looks for a
fact in what the agent wrote (the outcome check's required facts, state leakage, session
carryover).

- **case and whitespace**: text and phrase are folded alike — thousands commas dropped
  (`4,200` is `4200`), runs of whitespace one space, case folded (`casefold`);
- **numbers**: a number is found among the text's numbers by value, as `judge diff`
  compares them (`judge.diff.normalise`: `$42.00`, `42` and `42.0` are one number);
- **dates**: a date is found in any of the common forms — `2026-12-05`, `2026/12/05`,
  `12/5/2026` and `5/12/2026` (a slashed date with the year last is read both ways),
  `December 5, 2026`, `5 Dec 2026`, `5th of December 2026` — all read as the same day.

`Phrase` finds a folded phrase as a whole token (no letter or digit, and no digit across a
decimal point, just before or after it: `ORD-88412` is in "order ORD-88412." but not in
"ORD-884123"; `4200` is not in `4200.5`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date
from typing import Any

from judge.diff.normalise import normalise, same

NUMBER_IN_TEXT = re.compile(r"[$€£]?[+-]?\d[\d,]*(?:\.\d+)?")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")

Day = tuple[int, int, int]  # (year, month, day)


def fold(text: str) -> str:
    """The comparable form of a text: thousands commas dropped, whitespace runs one space,
    case folded."""
    return " ".join(_THOUSANDS.sub("", text).split()).casefold()


def numbers_in(text: str) -> Iterator[str]:
    """The numbers written in `text`, as written (a trailing comma or period dropped)."""
    for m in NUMBER_IN_TEXT.finditer(text):
        yield m.group(0).rstrip(",.")


#: a number standing alone: not glued to a letter or digit, and not a part of a date, a phone
#: number or an id whose parts a `-` or `/` joins (`2024-05-27`, `800-555-4417`, `TCK-4417-B`)
_NUMBER_TOKEN = re.compile(
    r"(?<![\w.,])(?<!\w[-/])[$€£]?[+-]?\d[\d,]*(?:\.\d+)?(?!\w|[.,]\d|[-/]\w)")


def number_tokens(text: str) -> Iterator[str]:
    """The numbers of `text` that stand as tokens of their own: `numbers_in` without those
    glued to a letter or a digit (`a9999`, `4200x`) or joined by `-` or `/` into a date, a
    phone number or an id; a sign is kept (`-27` is not 27)."""
    for m in _NUMBER_TOKEN.finditer(text):
        yield m.group(0).rstrip(",.")


def number_of(value: Any) -> int | float | None:
    """`value` as a number (`4200`, `"4,200"`, `"$42.00"`), or None when it is not one."""
    norm = normalise(value)
    if isinstance(norm, int | float) and not isinstance(norm, bool):
        return norm
    return None


def has_number(text: str, value: Any) -> bool:
    """Does `text` write the number `value` (by value: `$4,200.00` writes 4200)?"""
    return any(same(n, value) for n in numbers_in(text))


# --- dates ---------------------------------------------------------------------------

_MONTHS = {name: i for i, names in enumerate(
    (("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
     ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
     ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
     ("december", "dec")), start=1) for name in names}
_MONTH = "(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_ORD = r"(?:st|nd|rd|th)?"
_DATE = re.compile(
    r"(?<![\w.])(?P<y1>\d{4})[-/.](?P<m1>\d{1,2})[-/.](?P<d1>\d{1,2})(?![\w]|\.\d)"
    r"|(?<![\w.])(?P<a2>\d{1,2})[-/.](?P<b2>\d{1,2})[-/.](?P<y2>\d{4}|\d{2})(?![\w]|\.\d)"
    rf"|\b(?P<d3>\d{{1,2}}){_ORD}(?:\s+of)?\s+(?P<m3>{_MONTH}),?\s+(?P<y3>\d{{4}})\b"
    rf"|\b(?P<m4>{_MONTH})\s+(?P<d4>\d{{1,2}}){_ORD},?\s+(?P<y4>\d{{4}})\b",
    re.IGNORECASE)


def _day(y: int, m: int, d: int) -> Day | None:
    try:
        date(y, m, d)
    except ValueError:
        return None
    return (y, m, d)


def _year(text: str) -> int:
    y = int(text)
    if len(text) == 2:
        y += 2000 if y < 70 else 1900
    return y


def _days(m: re.Match[str]) -> list[Day]:
    g = m.groupdict()
    found: list[Day | None] = []
    if g["y1"]:
        found.append(_day(int(g["y1"]), int(g["m1"]), int(g["d1"])))
    elif g["y2"]:
        y, a, b = _year(g["y2"]), int(g["a2"]), int(g["b2"])
        found += [_day(y, a, b), _day(y, b, a)]  # month first (US) and day first
    elif g["y3"]:
        found.append(_day(int(g["y3"]), _MONTHS[g["m3"].lower().rstrip(".")], int(g["d3"])))
    elif g["y4"]:
        found.append(_day(int(g["y4"]), _MONTHS[g["m4"].lower().rstrip(".")], int(g["d4"])))
    return [d for d in found if d is not None]


def dates_in(text: str) -> set[Day]:
    """Every day written in `text`, in any of the forms above."""
    out: set[Day] = set()
    if not any(c.isdigit() for c in text):
        return out
    for m in _DATE.finditer(text):
        out.update(_days(m))
    return out


def date_of(value: Any) -> set[Day]:
    """The day(s) a value is, when the whole value is a date (empty otherwise)."""
    if not isinstance(value, str) or len(value) > 40:
        return set()
    text = value.strip()
    m = _DATE.fullmatch(text)
    return set(_days(m)) if m is not None else set()


# --- phrases ---------------------------------------------------------------------------


def _bounded(text: str, i: int, j: int) -> bool:
    """Is text[i:j] a whole token: no letter or digit on either side, and no digit joined
    to it across a decimal point or comma (`4200` in `4200.5`, `1.4200`)?"""
    if i > 0:
        c = text[i - 1]
        if c.isalnum() or (c in ".," and i > 1 and text[i - 2].isdigit() and text[i].isdigit()):
            return False
    if j < len(text):
        c = text[j]
        if c.isalnum() or (c in ".," and j + 1 < len(text) and text[j + 1].isdigit()
                           and text[j - 1].isdigit()):
            return False
    return True


class Phrase:
    """A phrase found as a whole token of folded text."""

    __slots__ = ("folded",)

    def __init__(self, phrase: str) -> None:
        self.folded = fold(phrase)

    @staticmethod
    def of(folded: str) -> Phrase:
        """The phrase of an already folded text."""
        p = Phrase("")
        p.folded = folded
        return p

    def find(self, folded_text: str) -> int:
        """Where the phrase starts in already folded text (-1: absent)."""
        p = self.folded
        if not p:
            return -1
        n = len(p)
        i = folded_text.find(p)
        while i >= 0:
            if _bounded(folded_text, i, i + n):
                return i
            i = folded_text.find(p, i + 1)
        return -1


def fact_in_text(text: str, value: Any) -> bool:
    """Does `text` state `value`: as a number among its numbers, as a day among its dates,
    or as a whole phrase after folding? (What the outcome check's `text` and `value` facts
    and the leakage check's values use.)"""
    if number_of(value) is not None and has_number(text, value):
        return True
    day = date_of(value)
    if day and day & dates_in(text):
        return True
    return Phrase(str(value)).find(fold(text)) >= 0
