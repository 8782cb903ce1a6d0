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


_HEX = frozenset("0123456789abcdefABCDEF")


def escape_ends_at(text: str, i: int) -> bool:
    """An escape sequence (`\\n`, `\\t`, `\\r`, `\\b`, `\\f`, `\\uXXXX`, as JSON text writes
    them) ends just before `i`: its last character is no part of the word after it."""
    if i >= 2 and text[i - 1] in "nrtbf" and text[i - 2] == "\\":
        return _unescaped(text, i - 2)
    if i >= 6 and text[i - 6] == "\\" and text[i - 5] == "u" and _HEX.issuperset(text[i - 4:i]):
        return _unescaped(text, i - 6)
    return False


def _unescaped(text: str, backslash: int) -> bool:
    """The backslash at `backslash` starts an escape (it is not itself escaped)."""
    j = backslash
    while j > 0 and text[j - 1] == "\\":
        j -= 1
    return (backslash - j) % 2 == 0


def word_before(text: str, i: int) -> bool:
    """A word character stands just before `i` (escape sequences do not count)."""
    return i > 0 and is_word_char(text[i - 1]) and not escape_ends_at(text, i)


def at_word_edges(text: str, start: int, end: int) -> bool:
    """True when [start, end) neither starts nor ends inside a word."""
    if word_before(text, start) and is_word_char(text[start]):
        return False
    return not (end < len(text) and is_word_char(text[end]) and is_word_char(text[end - 1]))


def whole_token(text: str, start: int, end: int) -> tuple[int, int]:
    """[start, end) grown to the credential-like run of characters around it, so replacing
    it never leaves part of a token behind (nor a dangling backslash of an escape)."""
    found_end = end
    while start > 0 and text[start - 1] in _TOKEN_CHARS and not escape_ends_at(text, start):
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
