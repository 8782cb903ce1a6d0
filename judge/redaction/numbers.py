"""Payment card numbers and US social security numbers: always redacted.

A card is 13–19 digits, bare or in groups split by one kind of separator (space or dash),
that passes the Luhn check and starts with a card network's prefix (Visa 4, Mastercard
51–55 and 2221–2720, Amex 34/37, Discover 6011/644–649/65, JCB 3528–3589, Diners 300–305/
36/38/39, UnionPay 62, Maestro 50/56–58/6x). Requiring a prefix keeps most 16-digit ids:
one random digit string in ten passes Luhn alone. An SSN is `AAA-GG-SSSS` (dashes or
spaces) with a valid area (not 000, 666 or 9xx), group (not 00) and serial (not 0000); a
bare nine-digit run counts only after an `ssn` / `social security` label. A number inside
a longer number, a word or a decimal is never touched.
"""

from __future__ import annotations

import re

from judge.redaction.rx import compile_re2
from judge.redaction.spans import Span, escape_ends_at, is_word_char

_DIGIT_RUN_RE = compile_re2(r"(?:\d[ -]?){12,}\d")
_SSN_RE = compile_re2(r"\d{3}([- ])\d{2}[- ]\d{4}")
_SSN_LABELLED = compile_re2(r"(?i)(?:\bssn|social[ _-]?security(?:[ _-]?(?:number|no))?)"
                            r"\W{0,12}(\d{9})")


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def card_network(digits: str) -> bool:
    n = len(digits)
    p2, p4 = int(digits[:2]), int(digits[:4])
    if digits[0] == "4":
        return n in (13, 16, 19)
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:
        return n == 16
    if p2 in (34, 37):
        return n == 15
    if digits.startswith("6011") or 644 <= int(digits[:3]) <= 649 or p2 == 65:
        return 16 <= n <= 19
    if 3528 <= p4 <= 3589:
        return 16 <= n <= 19
    if 300 <= int(digits[:3]) <= 305 or p2 in (36, 38, 39):
        return 14 <= n <= 19
    if p2 == 62:
        return 16 <= n <= 19
    if p2 in (50, 56, 57, 58) or digits[0] == "6":
        return 12 <= n <= 19
    return False


def _left_ok(text: str, start: int) -> bool:
    """Not the tail of a longer number, word, decimal or id (`x-1234…`, `5.1234…`)."""
    if start == 0 or escape_ends_at(text, start):
        return True
    c = text[start - 1]
    return not (is_word_char(c) or (c in ".,-" and start > 1 and is_word_char(text[start - 2])))


def _right_ok(text: str, end: int) -> bool:
    if end >= len(text):
        return True
    c = text[end]
    return not (is_word_char(c) or (c in ".,-" and end + 1 < len(text)
                                    and text[end + 1].isdigit()))


def _escape_end(text: str, i: int) -> int | None:
    """Where a `\\uXXXX` escape ends, when `i` lies among its hex digits; else None."""
    for back in range(2, 6):
        b = i - back
        if b >= 0 and text[b] == "\\" and text[b + 1:b + 2] == "u" \
                and len(text) >= b + 6 and all(c in _HEX_DIGITS for c in text[b + 2:b + 6]):
            return b + 6
    return None


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def _isolated(text: str, start: int, end: int) -> bool:
    return _left_ok(text, start) and _right_ok(text, end)


def find_cards(text: str) -> list[Span]:
    """Cards in runs of digit groups: any consecutive groups (one separator kind) may be one."""
    out: list[Span] = []
    for m in _DIGIT_RUN_RE.finditer(text):
        run_start, run_end = m.span()
        groups = [(g.start() + run_start, g.end() + run_start)
                  for g in _DIGITS.finditer(m.group())]
        inside = _escape_end(text, run_start)
        if inside is not None:  # `\\u00e94111…`: the run began with the escape's hex digits
            run_start = inside
            groups = [(max(a, inside), b) for a, b in groups if b > inside]
        i = 0
        while i < len(groups):
            hit = _card_from(text, groups, i, run_start, run_end)
            if hit is None:
                i += 1
                continue
            out.append(Span(groups[i][0], groups[hit][1], "card"))
            i = hit + 1
    return out


_DIGITS = re.compile(r"\d+")


def _card_from(text: str, groups: list[tuple[int, int]], i: int, run_start: int,
               run_end: int) -> int | None:
    """The index of the last group of a card that starts at group `i`, if there is one."""
    start = groups[i][0]
    if start == run_start and not _left_ok(text, start):
        return None
    digits = ""
    sep = ""
    for j in range(i, len(groups)):
        a, b = groups[j]
        if j > i:
            between = text[groups[j - 1][1]:a]
            if sep and between != sep:
                return None
            sep = between
        digits += text[a:b]
        if len(digits) > 19:
            return None
        if (len(digits) >= 13 and (b < run_end or _right_ok(text, b))
                and card_network(digits) and luhn_ok(digits)):
            return j
    return None


def ssn_ok(area: str, group: str, serial: str) -> bool:
    a = int(area)
    return a != 0 and a != 666 and a < 900 and group != "00" and serial != "0000"


def find_ssns(text: str, low: str | None = None) -> list[Span]:
    out: list[Span] = []
    for m in _SSN_RE.finditer(text):
        s, e = m.span()
        raw = m.group()
        if raw[6] != m.group(1) or not _isolated(text, s, e):
            continue
        if ssn_ok(raw[:3], raw[4:6], raw[7:]):
            out.append(Span(s, e, "ssn"))
    low = text.lower() if low is None else low
    if "ssn" in low or "social security" in low or "social_security" in low:
        for m in _SSN_LABELLED.finditer(text):
            d = m.group(1)
            s, e = m.span(1)
            if _isolated(text, s, e) and ssn_ok(d[:3], d[3:5], d[5:]):
                out.append(Span(s, e, "ssn"))
    return out
