"""Spans found in a text, resolved so that no two overlap, and applied whole.

Every detector reports `Span`s over the original text. `resolve` keeps, of overlapping
spans, the one of the stronger class (secrets before numbers before contact details before
identity), then the longer; spans touching a protected range (a marker, an allow-listed
value) are dropped. Replacement happens once, left to right, so pseudonyms are numbered in
reading order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

#: lower is stronger when two spans overlap
PRIORITY = {"secret": 0, "card": 1, "ssn": 1, "email": 2, "phone": 3, "identity": 4}

#: characters of a credential token: a secret found inside such a run takes the whole run
_TOKEN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+/.~")


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    cls: str
    #: what identifies the value for a pseudonym (an address, a phone's digits); else ""
    key: str = ""


def is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def at_word_edges(text: str, start: int, end: int) -> bool:
    """True when [start, end) neither starts nor ends inside a word."""
    if start > 0 and is_word_char(text[start - 1]) and is_word_char(text[start]):
        return False
    return not (end < len(text) and is_word_char(text[end]) and is_word_char(text[end - 1]))


def whole_token(text: str, start: int, end: int) -> tuple[int, int]:
    """[start, end) grown to the credential-like run of characters around it, so replacing
    it never leaves part of a token behind (nor a dangling backslash of an escape)."""
    found_end = end
    while start > 0 and text[start - 1] in _TOKEN_CHARS:
        start -= 1
    n = len(text)
    while end < n and text[end] in _TOKEN_CHARS:
        end += 1
    while end < n and text[end] == "=":  # base64 padding
        end += 1
    # sentence punctuation after the token is not part of it
    while end > found_end and text[end - 1] in ".-~/+":
        end -= 1
    while end - start > 1 and text[end - 1] == "\\" and _odd_backslashes(text, end):
        end -= 1
    return start, end


def _odd_backslashes(text: str, end: int) -> bool:
    i = end
    while i > 0 and text[i - 1] == "\\":
        i -= 1
    return (end - i) % 2 == 1


def resolve(spans: Iterable[Span], protected: list[tuple[int, int]]) -> list[Span]:
    """Non-overlapping spans, strongest first, none touching a protected range; in order."""
    chosen: list[Span] = []
    ordered = sorted(spans, key=lambda s: (PRIORITY.get(s.cls, 9), s.start - s.end, s.start))
    for s in ordered:
        if s.end <= s.start:
            continue
        if any(a < s.end and s.start < b for a, b in protected):
            continue
        if any(c.start < s.end and s.start < c.end for c in chosen):
            continue
        chosen.append(s)
    chosen.sort(key=lambda s: s.start)
    return chosen
