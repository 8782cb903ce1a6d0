"""Spans found in a text, resolved so that no two overlap, and applied whole.

Every detector reports `Span`s over the original text. `resolve` keeps, of overlapping
spans, the one of the stronger class (secrets before numbers before contact details before
identity), then the longer; spans touching a protected range (a marker, an allow-listed
value) are dropped. Replacement happens once, left to right, so pseudonyms are numbered in
reading order.
"""

from __future__ import annotations

from bisect import bisect_right
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
    """An ASCII letter, digit or underscore. Every value redaction looks for (keys, card
    numbers, model names, tool names) is ASCII, so a CJK or accented letter next to one is a
    boundary: `我用gpt-4o`, `密钥是sk-…` are found (they were not, when any Unicode letter
    counted as part of the word)."""
    return (ch.isascii() and ch.isalnum()) or ch == "_"


_HEX = frozenset("0123456789abcdefABCDEF")


def escape_ends_at(text: str, i: int) -> bool:
    """An escape sequence's letters (`\\n`, `\\t`, `\\r`, `\\b`, `\\f`, `\\uXXXX`, as JSON
    text writes them) end just before `i`: its last character is no part of the word after
    it. However many backslashes precede it: a literal backslash-n (a JSON string inside a
    JSON string renders as `\\\\n`) is a boundary too, or a key or card number after it would
    be read as the tail of a word `n…` and kept (found by a hostile review)."""
    if i >= 2 and text[i - 1] in "nrtbf" and text[i - 2] == "\\":
        return True
    return i >= 6 and text[i - 6] == "\\" and text[i - 5] == "u" \
        and _HEX.issuperset(text[i - 4:i])


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


class Intervals:
    """Disjoint half-open intervals, kept sorted: overlap test and insertion in O(log n)
    comparisons (a hostile text can hold a hundred thousand spans)."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def overlaps(self, start: int, end: int) -> bool:
        i = bisect_right(self.starts, start)
        if i > 0 and self.ends[i - 1] > start:
            return True
        return i < len(self.starts) and self.starts[i] < end

    def next_start(self, pos: int) -> int:
        """The start of the first interval that ends after `pos`."""
        i = bisect_right(self.starts, pos)
        if i > 0 and self.ends[i - 1] > pos:
            return pos
        return self.starts[i] if i < len(self.starts) else pos

    def add(self, start: int, end: int) -> None:
        i = bisect_right(self.starts, start)
        self.starts.insert(i, start)
        self.ends.insert(i, end)


def merged(ranges: Iterable[tuple[int, int]]) -> Intervals:
    out = Intervals()
    for a, b in sorted(ranges):
        if b <= a:
            continue
        if out.ends and a <= out.ends[-1]:
            out.ends[-1] = max(out.ends[-1], b)
        else:
            out.starts.append(a)
            out.ends.append(b)
    return out


def _secrets_joined(spans: Iterable[Span], guard: Intervals) -> list[Span]:
    """`spans` with overlapping secrets made one (their union), unless the union would touch
    a protected range: two rules that each see part of a credential (a cut-off PEM block
    and the JWT on its next line) must not leave the other's part behind."""
    out: list[Span] = []
    secrets: list[Span] = []
    for s in spans:
        (secrets if s.cls == "secret" and s.end > s.start else out).append(s)
    secrets.sort(key=lambda s: (s.start, -s.end))
    run: list[Span] = []
    end = -1
    for s in secrets:
        if run and s.start < end:
            run.append(s)
            end = max(end, s.end)
            continue
        out.extend(_union(run, end, guard))
        run, end = [s], s.end
    out.extend(_union(run, end, guard))
    return out


def _union(run: list[Span], end: int, guard: Intervals) -> list[Span]:
    if len(run) <= 1:
        return run
    union = Span(run[0].start, end, "secret")
    return run if guard.overlaps(union.start, union.end) else [union]


def resolve(spans: Iterable[Span], protected: list[tuple[int, int]], text: str = ""
            ) -> list[Span]:
    """Non-overlapping spans, strongest first, none touching a protected range; in order.

    A name whose version runs into a stronger span (`GPT 4000000000000002`: a model name
    and a card) keeps its part before that span (`GPT`), so the name is not left behind
    for a second pass to find."""
    guard = merged(protected)
    taken = Intervals()
    chosen: list[Span] = []
    ordered = sorted(_secrets_joined(spans, guard),
                     key=lambda s: (PRIORITY.get(s.cls, 9), s.start - s.end, s.start))
    for s in ordered:
        if s.end <= s.start or guard.overlaps(s.start, s.end):
            continue
        if taken.overlaps(s.start, s.end):
            if s.cls != "identity" or not text:
                continue
            end = taken.next_start(s.start)
            while end > s.start and not text[end - 1].isalnum():
                end -= 1
            if end <= s.start or taken.overlaps(s.start, end) or guard.overlaps(s.start, end):
                continue
            s = Span(s.start, end, s.cls, s.key)
        taken.add(s.start, s.end)
        chosen.append(s)
    chosen.sort(key=lambda s: s.start)
    return chosen
