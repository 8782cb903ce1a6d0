"""Email addresses and phone numbers, found for consistent pseudonyms (`[email-1]`, `[phone-1]`).

Emails: a practical address pattern (a local part of any address characters, dots
anywhere included, `@`, a dotted domain with a letter TLD), only where the text has an
`@`. Phones: a cheap pattern finds digit runs shaped like a number — international with
`+` (`+44 20 7946 0958`, `+14155552671`) or North American with separators
(`(415) 555-2671`, `415.555.2671`, `1-415-555-2671`) — then libphonenumber (the
`phonenumberslite` port) must accept it as a valid number. Bare digit runs, national
formats of other countries, dates and times are not phones: without a `+` or the North
American grouping they are far more often ids, amounts or order numbers. The pseudonym
key is the lower-cased address and the number's E.164 form, so `+1 415 555 2671` and
`(415) 555-2671` are the same `[phone-N]`.
"""

from __future__ import annotations

import re
from functools import lru_cache

import phonenumbers

from judge.redaction.rx import compile_re2
from judge.redaction.spans import Span, at_word_edges

_EMAIL_RE = compile_re2(
    r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}")
_PHONE_RE = compile_re2(
    r"\+\d[\d .()\-]{5,20}\d"
    r"|(?:1[ .\-])?(?:\(\d{3}\) ?|\d{3}[ .\-])\d{3}[ .\-]\d{4}")
_DATE_RE = re.compile(r"(?:19|20)\d\d[-./ ]\d\d?[-./ ]\d\d?|\d\d?[-./]\d\d?[-./](?:19|20)\d\d")
DEFAULT_REGION = "US"


def find_emails(text: str) -> list[Span]:
    if "@" not in text:
        return []
    out: list[Span] = []
    for m in _EMAIL_RE.finditer(text):
        s, e = m.span()
        # a URL credential (`user:pw@host`) is the secret rules' business
        if s >= 1 and text[s - 1] == ":":
            continue
        while s < e and text[s] in "'`{|}~=.":
            s += 1
        out.append(Span(s, e, "email", text[s:e].lower()))
    return out


def find_phones(text: str) -> list[Span]:
    out: list[Span] = []
    for m in _PHONE_RE.finditer(text):
        s, e = m.span()
        span = _phone(text, s, e)
        if span is None and e - s > 7:
            # a match that starts inside a longer number (`…991 (201) 200-0000` taken as
            # `1 (201)…`) may hide a phone just after: look once more inside it
            inner = text[s + 1:e]
            for k in _PHONE_RE.finditer(inner):
                span = _phone(text, s + 1 + k.start(), s + 1 + k.end())
                if span is not None:
                    break
        if span is not None:
            out.append(span)
    return out


def _phone(text: str, s: int, e: int) -> Span | None:
    raw = text[s:e]
    if not at_word_edges(text, s, e) or (s > 0 and text[s - 1] in "-./:") or (
            e < len(text) and text[e] in "-/:") or (
            e + 1 < len(text) and text[e] == "." and text[e + 1].isdigit()):
        return None  # part of a longer number, a date, a time or a path
    if s > 0 and text[s - 1] == "(" and raw[0].isdigit():
        return None
    key = _e164(raw)
    return None if key is None else Span(s, e, "phone", key)


@lru_cache(maxsize=4096)
def _e164(raw: str) -> str | None:
    digits = sum(c.isdigit() for c in raw)
    if not 7 <= digits <= 15:
        return None
    if not raw.startswith("+") and not any(c in raw for c in " .-()"):
        return None
    if _DATE_RE.search(raw):
        return None
    try:
        num = phonenumbers.parse(raw, None if raw.startswith("+") else DEFAULT_REGION)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_valid_number(num):
        return None
    return phonenumbers.format_number(num, phonenumbers.PhoneNumberFormat.E164)
