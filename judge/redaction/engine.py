"""One item's redaction: every detector over a text, overlaps resolved, markers written.

An `ItemRedactor` lives for one item (one judge request). It remembers what it has seen
so the item reads consistently: the values of secret-named fields (scrubbed wherever they
appear again), and the pseudonym of every email and phone number (`[email-1]` is the same
address in every block). It counts replacements per class (`counts`), never values.

Two entry points:
- `text(s)`: a rendered piece. When `s` is JSON text (an object or array), a span inside a
  key is dropped — keys are names, never rewritten — and a redacted bare number becomes a
  quoted marker, so the JSON stays JSON.
- `value(v)`: a structured value. Keys are never changed; a secret-named field's value is
  replaced whole (and its strings remembered); every string leaf goes through `text`; a
  number leaf is replaced (by a marker string) only when it is a card number or an SSN.

Nothing is cut inside a word, key, tool name or number: identity matches must sit at word
edges, secrets found inside a token take the whole token, numbers must stand alone.
Markers are never matched again, so redaction is idempotent.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from judge.redaction.config import RedactionConfig
from judge.redaction.fields import is_secret_field
from judge.redaction.gitleaks import find_gitleaks
from judge.redaction.identity import Literals, candidate_strings, find_identity, literals
from judge.redaction.marks import (
    CLASSES,
    EMAIL_MARK,
    FIXED_MARKS,
    MARK_RE,
    PHONE_MARK,
    SECRET_MARK,
)
from judge.redaction.normalize import view
from judge.redaction.numbers import find_cards, find_ssns
from judge.redaction.pii import find_emails, find_phones
from judge.redaction.secrets import find_secrets, is_placeholder
from judge.redaction.spans import Span, resolve, whole_token

#: a remembered secret value shorter than this is not searched for elsewhere
MIN_REMEMBERED_CHARS = 4
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_MAX_DEPTH = 200


class ItemRedactor:
    """Redacts one item's texts and values; see the module docstring."""

    def __init__(self, config: RedactionConfig | None = None, candidate: Any = None) -> None:
        self.config = config or RedactionConfig()
        names = candidate_strings(candidate) + tuple(
            n.strip() for n in self.config.identity_names if n.strip())
        self._names: Literals | None = literals(tuple(sorted(set(names))))
        self._remembered: set[str] = set()
        self._remembered_re: re.Pattern[str] | None = None
        self._emails: dict[str, int] = {}
        self._phones: dict[str, int] = {}
        self._counts: Counter[str] = Counter()

    @property
    def counts(self) -> dict[str, int]:
        """How many values of each class were replaced so far (every class, zeros too)."""
        return {c: self._counts.get(c, 0) for c in CLASSES}

    # --- text ---------------------------------------------------------------------------

    def texts(self, pieces: Sequence[str]) -> list[str]:
        """Redact several pieces of one item at once (one scan over their joined text; a
        span never crosses from one piece into the next)."""
        if not pieces:
            return []
        joined = "\n".join(pieces)
        spans = self._spans(joined)
        if not spans:
            return list(pieces)
        out: list[str] = []
        starts: list[int] = []
        pos = 0
        for p in pieces:
            starts.append(pos)
            pos += len(p) + 1
        per_piece: list[list[Span]] = [[] for _ in pieces]
        for sp in spans:
            i = bisect_right(starts, sp.start) - 1
            base = starts[i]
            end = min(sp.end, base + len(pieces[i]))
            if end > sp.start:
                per_piece[i].append(Span(sp.start - base, end - base, sp.cls, sp.key))
        for piece, found in zip(pieces, per_piece, strict=True):
            out.append(self._finish(piece, found) if found else piece)
        return out

    def text(self, s: str) -> str:
        if not s:
            return s
        spans = self._spans(s)
        return self._finish(s, spans) if spans else s

    def _finish(self, s: str, spans: list[Span]) -> str:
        json_like = s.lstrip()[:1] in ("{", "[")
        if json_like:
            spans = _outside_keys(s, spans)
        return self._apply(s, spans, json_like)

    def _spans(self, s: str) -> list[Span]:
        cfg = self.config
        low = s.lower()
        found: list[Span] = []
        if cfg.secrets:
            for span, value in find_secrets(s, low):
                found.append(span)
                if value is not None:
                    self.remember(value)
            found.extend(find_gitleaks(s, low))
            if cfg.secret_re is not None:
                found.extend(Span(*whole_token(s, *m.span()), "secret")
                             for m in cfg.secret_re.finditer(s) if m.end() > m.start())
            if self._remembered_re is not None:
                found.extend(Span(*whole_token(s, *m.span()), "secret")
                             for m in self._remembered_re.finditer(s))
        found.extend(find_cards(s))
        found.extend(find_ssns(s, low))
        if cfg.pii:
            found.extend(find_emails(s))
            found.extend(find_phones(s))
        v = view(s)
        found.extend(find_identity(s, v, v.text.lower() if v.pieces is not None else low,
                                   self._names, cfg.identity_re))
        if not found:
            return []
        return resolve(found, self._protected(s))

    def _protected(self, s: str) -> list[tuple[int, int]]:
        out = [m.span() for m in MARK_RE.finditer(s)] if "[" in s else []
        for value in self.config.allowed:
            i = s.find(value)
            while i >= 0:
                out.append((i, i + len(value)))
                i = s.find(value, i + 1)
        return out

    def _apply(self, s: str, spans: Iterable[Span], json_like: bool) -> str:
        parts: list[str] = []
        pos = 0
        for sp in spans:
            parts.append(s[pos:sp.start])
            mark = self._mark(sp)
            if json_like and _bare_json_number(s, sp.start, sp.end):
                mark = f'"{mark}"'
            parts.append(mark)
            self._counts[sp.cls] += 1
            pos = sp.end
        parts.append(s[pos:])
        return "".join(parts)

    def _mark(self, sp: Span) -> str:
        if sp.cls == "email":
            return EMAIL_MARK.format(n=self._emails.setdefault(sp.key, len(self._emails) + 1))
        if sp.cls == "phone":
            return PHONE_MARK.format(n=self._phones.setdefault(sp.key, len(self._phones) + 1))
        return FIXED_MARKS[sp.cls]

    # --- remembered secrets -------------------------------------------------------------

    def remember(self, value: str) -> None:
        """Scrub `value` wherever it appears from now on (a secret field's value)."""
        v = value.strip()
        if len(v) < MIN_REMEMBERED_CHARS or v in self._remembered or is_placeholder(v):
            return
        if MARK_RE.fullmatch(v) or v in self.config.allowed:
            return
        self._remembered.add(v)
        forms = {v, *(_json_escaped(v),)}
        alts = sorted((re.escape(f) for f in forms), key=len, reverse=True)
        old = self._remembered_re.pattern if self._remembered_re is not None else None
        self._remembered_re = re.compile("|".join([*alts, *([old] if old else [])]))

    # --- structured values --------------------------------------------------------------

    def fields(self, v: Any) -> Any:
        """`v` with secret-named fields' values replaced (the same object when nothing was);
        their strings are remembered. Only keys are looked at: cheap, for rendering."""
        if not self.config.secrets:
            return v
        return self._fields(v, 0)

    def _fields(self, v: Any, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            return v
        if isinstance(v, dict):
            out: dict[Any, Any] | None = None
            for k, x in v.items():
                if is_secret_field(str(k)) and _has_string(x, 0):
                    self._remember_all(x, 0)
                    self._counts["secret"] += 1
                    y: Any = SECRET_MARK
                else:
                    y = self._fields(x, depth + 1)
                if y is not x and out is None:
                    out = dict(v)
                if out is not None:
                    out[k] = y
            return v if out is None else out
        if isinstance(v, list):
            items = [self._fields(x, depth + 1) for x in v]
            return v if all(a is b for a, b in zip(items, v, strict=True)) else items
        return v

    def value(self, v: Any) -> Any:
        """`v` fully redacted: secret fields, then every string and number leaf."""
        v = self.fields(v)
        return self._leaves(v, 0)

    def _leaves(self, v: Any, depth: int) -> Any:
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, bool) or depth > _MAX_DEPTH:
            return v
        if isinstance(v, int):
            s = str(v)
            if len(s) >= 9 and (find_cards(s) or find_ssns(s)):
                self._counts["card" if find_cards(s) else "ssn"] += 1
                return FIXED_MARKS["card" if find_cards(s) else "ssn"]
            return v
        if isinstance(v, dict):
            out = {k: self._leaves(x, depth + 1) for k, x in v.items()}
            return v if all(out[k] is v[k] for k in v) else out
        if isinstance(v, list):
            items = [self._leaves(x, depth + 1) for x in v]
            return v if all(a is b for a, b in zip(items, v, strict=True)) else items
        return v

    def _remember_all(self, v: Any, depth: int) -> None:
        if depth > _MAX_DEPTH:
            return
        if isinstance(v, str):
            self.remember(v)
        elif isinstance(v, dict):
            for x in v.values():
                self._remember_all(x, depth + 1)
        elif isinstance(v, list | tuple):
            for x in v:
                self._remember_all(x, depth + 1)


def _has_string(v: Any, depth: int) -> bool:
    if isinstance(v, str):
        return bool(v) and not is_placeholder(v) and not MARK_RE.fullmatch(v)
    if depth > _MAX_DEPTH:
        return False
    if isinstance(v, dict):
        return any(_has_string(x, depth + 1) for x in v.values())
    if isinstance(v, list | tuple):
        return any(_has_string(x, depth + 1) for x in v)
    return False


def _json_escaped(v: str) -> str:
    import json

    return json.dumps(v, ensure_ascii=False)[1:-1]


def _outside_keys(s: str, spans: list[Span]) -> list[Span]:
    """Spans of JSON text that do not touch an object key."""
    keys: list[tuple[int, int]] = []
    for m in _JSON_STRING.finditer(s):
        j = m.end()
        while j < len(s) and s[j] in " \t\r\n":
            j += 1
        if j < len(s) and s[j] == ":":
            keys.append(m.span())
    if not keys:
        return spans
    return [sp for sp in spans if not any(a < sp.end and sp.start < b for a, b in keys)]


def _bare_json_number(s: str, start: int, end: int) -> bool:
    """The span is a whole number token of JSON text (not inside a string)."""
    before = s[:start].rstrip()[-1:]
    after = s[end:].lstrip()[:1]
    return before in (":", ",", "[") and after in (",", "}", "]") and s[start:end].isdigit()
