"""One item's redaction: every detector over a text, overlaps resolved, markers written.

An `ItemRedactor` lives for one item (one judge request). It remembers what it has seen
so the item reads consistently: the values of secret-named fields (scrubbed wherever they
appear again), and the pseudonym of every email and phone number (`[email-1]` is the same
address in every block). It counts replacements per class (`counts`), never values.

Names passed as `keep` (an item's tool names and ledger keys) are never rewritten where
they stand as whole tokens: a tool called `gpt_lookup` or a ledger key `orderPaidCents`
reads the same to the judge. (A secret or identity *inside* a kept name therefore stays;
names come from the scenario and the trace's tool list, not from free text.)

Two entry points:
- `text(s)`: a rendered piece. When `s` is JSON text (an object or array), a span inside a
  key is dropped — keys are names, never rewritten — and a redacted bare number becomes a
  quoted marker, so the JSON stays JSON.
- `value(v)`: a structured value. Keys are never changed (down to 200 levels of nesting;
  a deeper subtree is scanned as JSON text and returned as that text); under a
  secret-named field every string and number leaf becomes the marker (strings remembered,
  nested keys kept); every other string leaf goes through `text`; a number leaf is
  replaced (by a marker string) only when it is a card number or an SSN.

Nothing is cut inside a word, key, tool name or number: identity matches must sit at word
edges, secrets found inside a token take the whole token, numbers must stand alone.
Markers are never matched again, so redaction is idempotent.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache
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
from judge.redaction.phrases import find_phrases
from judge.redaction.pii import find_emails, find_phones
from judge.redaction.secrets import find_secrets, is_placeholder
from judge.redaction.spans import Span, at_word_edges, is_word_char, resolve, whole_token

_DEFAULT = RedactionConfig()
#: texts up to this size have their detections cached (an item's goal and ledger blocks
#: recur across the items of a run)
_CACHED_CHARS = 65_536


def _detect(s: str, cfg: RedactionConfig, names: Literals | None
            ) -> tuple[tuple[Span, ...], tuple[str, ...]]:
    """Every span the detectors find in `s` (before overlaps are resolved), and the secret
    values worth remembering; depends on nothing but its arguments."""
    low = s.lower()
    found: list[Span] = []
    remember: list[str] = []
    if cfg.secrets:
        for span, value in (*find_secrets(s, low), *find_phrases(s)):
            found.append(span)
            if value is not None:
                remember.append(value)
        found.extend(find_gitleaks(s, low))
        if cfg.secret_re is not None:
            found.extend(Span(*whole_token(s, *m.span()), "secret")
                         for m in cfg.secret_re.finditer(s) if m.end() > m.start())
    found.extend(find_cards(s))
    found.extend(find_ssns(s, low))
    if cfg.pii:
        found.extend(find_emails(s))
        found.extend(find_phones(s))
    v = view(s)
    found.extend(find_identity(s, v, v.text.lower() if v.pieces is not None else low,
                               names, cfg.identity_re))
    return tuple(found), tuple(remember)


_intrinsic = lru_cache(maxsize=512)(_detect)


def _canonical(candidate: Any) -> str:
    try:
        return json.dumps(candidate, sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError):
        return json.dumps(str(candidate))


@lru_cache(maxsize=256)
def _names(candidate_json: str, extra: tuple[str, ...]) -> Literals | None:
    """The literal names to redact for one candidate record (cached: a run has few)."""
    names = candidate_strings(json.loads(candidate_json)) + tuple(
        n.strip() for n in extra if n.strip())
    return literals(tuple(sorted(set(names))))


#: a remembered secret value shorter than this is not searched for elsewhere
MIN_REMEMBERED_CHARS = 4
_MAX_DEPTH = 200


class ItemRedactor:
    """Redacts one item's texts and values; see the module docstring."""

    def __init__(self, config: RedactionConfig | None = None, candidate: Any = None,
                 keep: Iterable[str] = ()) -> None:
        self.config = config or _DEFAULT
        #: names never rewritten where they stand as whole tokens (tool names, ledger keys)
        self._keep = tuple(sorted({k for k in keep if isinstance(k, str) and k}, key=len,
                                  reverse=True))
        self._names: Literals | None = _names(_canonical(candidate),
                                              tuple(self.config.identity_names))
        self._remembered: set[str] = set()
        self._remembered_re: re.Pattern[str] | None = None
        self._remembered_stale = False
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
        found = self._found(joined)
        if not found:
            return list(pieces)
        starts: list[int] = []
        pos = 0
        for p in pieces:
            starts.append(pos)
            pos += len(p) + 1
        per_piece = _per_piece(found, starts, pieces)
        guards = _per_piece([Span(a, b, "") for a, b in self._protected(joined)], starts,
                            pieces)
        return [self._finish(piece, spans, [(g.start, g.end) for g in guard])
                if spans else piece
                for piece, spans, guard in zip(pieces, per_piece, guards, strict=True)]

    def text(self, s: str) -> str:
        if not s:
            return s
        found = self._found(s)
        return self._finish(s, found, self._protected(s)) if found else s

    def _finish(self, s: str, spans: list[Span], protected: list[tuple[int, int]]) -> str:
        """`s` with the detections `spans` applied: those a JSON text cannot take dropped
        first (inside a key, or across a quote), then overlaps resolved. Dropping first
        matters: a span that runs out of its string (a detector's match from a cut-off PEM
        block to the next block's header) must not shadow the spans inside the string."""
        bare: set[int] = set()
        if _looks_like_json(s):  # keys stay, bare values get quoted
            spans, bare = _json_aware(s, spans)
        chosen = resolve(spans, protected, s) if spans else []
        return self._apply(s, chosen, bare) if chosen else s

    def _found(self, s: str) -> list[Span]:
        """Every detection in `s` (overlaps not yet resolved)."""
        intrinsic, values = _intrinsic(s, self.config, self._names) \
            if len(s) <= _CACHED_CHARS else _detect(s, self.config, self._names)
        for value in values:
            self.remember(value)
        found = list(intrinsic)
        remembered = self._remembered_pattern()
        if remembered is not None and self.config.secrets:
            found.extend(Span(*whole_token(s, *m.span()), "secret")
                         for m in remembered.finditer(s))
        return found

    def _protected(self, s: str) -> list[tuple[int, int]]:
        out = [m.span() for m in MARK_RE.finditer(s)] if "[" in s else []
        for value in self.config.allowed:
            out.extend(_occurrences(s, value, whole=False))
        for name in self._keep:
            out.extend(_occurrences(s, name, whole=True))
        return out

    def _apply(self, s: str, spans: Iterable[Span], bare: set[int]) -> str:
        parts: list[str] = []
        pos = 0
        for sp in spans:
            parts.append(s[pos:sp.start])
            mark = self._mark(sp)
            if sp.start in bare:
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
        self._remembered_stale = True

    def _remembered_pattern(self) -> re.Pattern[str] | None:
        """One regex of every remembered value (raw and JSON-escaped), longest first;
        rebuilt only when a value was added since."""
        if self._remembered_stale:
            forms = {f for v in self._remembered for f in (v, _json_escaped(v))}
            alts = sorted(forms, key=len, reverse=True)
            self._remembered_re = re.compile("|".join(re.escape(f) for f in alts))
            self._remembered_stale = False
        return self._remembered_re

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
                y = self._secret(x, depth + 1) if is_secret_field(str(k)) else self._fields(
                    x, depth + 1)
                if y is not x and out is None:
                    out = dict(v)
                if out is not None:
                    out[k] = y
            return v if out is None else out
        if isinstance(v, list):
            items = [self._fields(x, depth + 1) for x in v]
            return v if all(a is b for a, b in zip(items, v, strict=True)) else items
        return v

    def _secret(self, v: Any, depth: int) -> Any:
        """The value of a secret-named field: every string and number leaf becomes the
        marker (strings remembered); keys, booleans and nulls stay."""
        if depth > _MAX_DEPTH:
            return v
        if isinstance(v, str):
            if not v.strip() or is_placeholder(v) or MARK_RE.fullmatch(v):
                return v
            self.remember(v)
            self._counts["secret"] += 1
            return SECRET_MARK
        if isinstance(v, int | float) and not isinstance(v, bool):
            self.remember(str(v))
            self._counts["secret"] += 1
            return SECRET_MARK
        if isinstance(v, dict):
            new = {k: self._secret(x, depth + 1) for k, x in v.items()}
            return v if all(new[k] is v[k] for k in v) else new
        if isinstance(v, list):
            items = [self._secret(x, depth + 1) for x in v]
            return v if all(a is b for a, b in zip(items, v, strict=True)) else items
        return v

    def value(self, v: Any) -> Any:
        """`v` fully redacted: secret fields, then every string and number leaf."""
        v = self.fields(v)
        return self._leaves(v, 0)

    def _leaves(self, v: Any, depth: int) -> Any:
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, bool):
            return v
        if depth > _MAX_DEPTH and isinstance(v, dict | list):
            # deeper than any real value: scanned as JSON text, returned as that text
            try:
                return self.text(json.dumps(v, ensure_ascii=False, default=str))
            except (RecursionError, ValueError):
                self._counts["secret"] += 1
                return SECRET_MARK  # too deep to even read: nothing of it leaves
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


def _occurrences(s: str, value: str, *, whole: bool) -> list[tuple[int, int]]:
    """Where `value` occurs in `s` (only as a whole token when `whole`)."""
    out: list[tuple[int, int]] = []
    i = s.find(value)
    while i >= 0:
        j = i + len(value)
        if not whole or _stands_alone(s, i, j):
            out.append((i, j))
        i = s.find(value, i + 1)
    return out


_JOINERS = frozenset(".-/@:")


def _stands_alone(s: str, i: int, j: int) -> bool:
    """[i, j) is a token of its own: at word edges, and not joined by `.`, `-`, `/`, `@`
    or `:` to a word (a ledger key `k` is no shield for the candidate name `cand.k`)."""
    if not at_word_edges(s, i, j):
        return False
    if i >= 2 and s[i - 1] in _JOINERS and is_word_char(s[i - 2]):
        return False
    return not (j + 1 < len(s) and s[j] in _JOINERS and is_word_char(s[j + 1]))


def _per_piece(spans: Iterable[Span], starts: list[int], pieces: Sequence[str]
               ) -> list[list[Span]]:
    """Spans over the joined pieces, each given to the piece it starts in (relative to it,
    cut at that piece's end)."""
    out: list[list[Span]] = [[] for _ in pieces]
    for sp in spans:
        i = bisect_right(starts, sp.start) - 1
        base = starts[i]
        end = min(sp.end, base + len(pieces[i]))
        if end > sp.start:
            out[i].append(Span(sp.start - base, end - base, sp.cls, sp.key))
    return out


def _json_escaped(v: str) -> str:
    return json.dumps(v, ensure_ascii=False)[1:-1]


_QUOTE_OR_ESCAPE = re.compile(r'\\.|"', re.DOTALL)


def _looks_like_json(s: str) -> bool:
    """An object or array: `{…}` or `[…]` (what render writes for structured values)."""
    t = s.strip()
    return len(t) >= 2 and (t[0], t[-1]) in (("{", "}"), ("[", "]"))


def _json_aware(s: str, spans: list[Span]) -> tuple[list[Span], set[int]]:
    """Of spans over JSON text: those that touch no object key, and the starts of those
    that replace a bare value (a number: its marker must be quoted).

    A span is inside a string when an odd number of unescaped quotes precede it; such a
    string is a key when its closing quote is followed by `:`. A span that holds an
    unescaped quote runs from one string into another and is dropped. (Quote positions
    are found once per text; each span costs a binary search.)"""
    quotes = [m.start() for m in _QUOTE_OR_ESCAPE.finditer(s) if m.group() == '"']
    kept: list[Span] = []
    bare: set[int] = set()
    for sp in spans:
        i = bisect_left(quotes, sp.start)
        close = quotes[i] if i < len(quotes) else None
        if close is not None and close < sp.end:
            continue
        if i % 2 == 0:
            kept.append(sp)
            bare.add(sp.start)
        elif close is None or s[close + 1:close + 40].lstrip()[:1] != ":":
            kept.append(sp)
    return kept, bare
