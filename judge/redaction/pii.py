"""Email addresses and phone numbers, found for consistent pseudonyms (`[email-1]`, `[phone-1]`).

Emails: a practical address pattern (local part, `@`, a dotted domain with a letter TLD),
only where the text has an `@`. Phones: a cheap pattern finds digit runs shaped like a
number (a `+` country code, or separators between groups: `(415) 555-2671`, `415.555.2671`,
`+44 20 7946 0958`), then libphonenumber (the `phonenumberslite` port) must accept it as a
valid number — as an international number, or as a US one. Bare digit runs without `+` or
separators are not phones: they are far more often ids, amounts or order numbers.
The pseudonym key is the lower-cased address and the number's E.164 form, so `+1 415 555
2671` and `(415) 555-2671` are the same `[phone-N]`.
"""

from __future__ import annotations

from functools import lru_cache

import phonenumbers

from judge.redaction.rx import compile_re2
from judge.redaction.spans import Span, at_word_edges

_EMAIL_RE = compile_re2(
    r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}")
_PHONE_RE = compile_re2(
    r"(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]\d{2,4}){1,4}"
    r"|\+\d{7,15}")
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
        while s < e and text[s] in "'`{|}~=":
            s += 1
        out.append(Span(s, e, "email", text[s:e].lower()))
    return out


def find_phones(text: str) -> list[Span]:
    out: list[Span] = []
    for m in _PHONE_RE.finditer(text):
        s, e = m.span()
        raw = m.group()
        if not at_word_edges(text, s, e) or (s > 0 and text[s - 1] in "-./:") or (
                e < len(text) and text[e] in "-/" ) or (
                e + 1 < len(text) and text[e] == "." and text[e + 1].isdigit()):
            continue
        if s > 0 and text[s - 1] == "(" and raw[0].isdigit():
            continue
        key = _e164(raw)
        if key is not None:
            out.append(Span(s, e, "phone", key))
    return out


@lru_cache(maxsize=4096)
def _e164(raw: str) -> str | None:
    digits = sum(c.isdigit() for c in raw)
    if not 7 <= digits <= 15:
        return None
    if not raw.startswith("+") and not any(c in raw for c in " .-()"):
        return None
    if _looks_like_date_or_version(raw):
        return None
    try:
        num = phonenumbers.parse(raw, None if raw.startswith("+") else DEFAULT_REGION)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_valid_number(num):
        return None
    return phonenumbers.format_number(num, phonenumbers.PhoneNumberFormat.E164)


def _looks_like_date_or_version(raw: str) -> bool:
    parts = [p for p in raw.replace("(", " ").replace(")", " ").replace(".", " ")
             .replace("-", " ").split() if p]
    if len(parts) == 3 and len(parts[0]) == 4 and parts[0][:2] in ("19", "20"):
        return True  # 2024-05-20, 2024.05.20
    return "." in raw and all(len(p) <= 2 for p in parts)
