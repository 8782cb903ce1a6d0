"""Model-blind, secret-free judge input.

Two things never reach a judge: the identity of the system under test (every string of the
trace's `candidate`, plus configured names and patterns) and secrets (API keys, bearer tokens,
JWTs, private keys, and the values of password/secret/token/api_key fields, wherever those
values appear again). Identity strings shorter than MIN_IDENTITY_CHARS are not scrubbed (a
two-letter string would erase ordinary text); configure a pattern for such names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from judge.request import Redaction as Redaction

IDENTITY_MARK = "[candidate]"
SECRET_MARK = "[redacted:secret]"
MIN_IDENTITY_CHARS = 3
MIN_SECRET_VALUE_CHARS = 4

_SECRET_PATTERNS = [
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
    r"sk-ant-[A-Za-z0-9_\-]{8,}",
    r"sk-[A-Za-z0-9_\-]{16,}",
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    r"\bgh[pousr]_[A-Za-z0-9]{20,}",
    r"\bgithub_pat_[A-Za-z0-9_]{20,}",
    r"\bxox[abprs]-[A-Za-z0-9\-]{10,}",
    r"\bAIza[0-9A-Za-z_\-]{30,}",
    r"\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}",
    # a bearer/basic credential: a token-like word (with a digit, or 20+ chars)
    r"\b(?i:bearer)\s+(?=[A-Za-z0-9\-._~+/]*\d|[A-Za-z0-9\-._~+/]{20})"
    r"[A-Za-z0-9\-._~+/]{8,}=*",
    r"(?i:authorization)[\"':=\s]+(?i:basic)\s+[A-Za-z0-9+/]{8,}=*",
]
SECRET_RE = re.compile("|".join(f"(?:{p})" for p in _SECRET_PATTERNS))
# `password: x`, `"api_key": "x"`, `token=x` in free text or serialized JSON.
INLINE_SECRET_RE = re.compile(
    r"(?i)(\b(?:password|passwd|pwd|passphrase|secret|client_secret|token|access_token|"
    r"refresh_token|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key)\b"
    r"\s*[\"']?\s*[:=]\s*[\"']?)([^\s\"',;}{\]\[]+)"
)
_SECRET_NAMES = frozenset({
    "password", "passwd", "pwd", "passphrase", "secret", "token", "apikey", "accesstoken",
    "refreshtoken", "idtoken", "authtoken", "bearertoken", "apitoken", "sessiontoken",
    "authorization", "auth", "clientsecret", "privatekey", "accesskey", "secretkey",
    "secretaccesskey", "credential", "credentials", "cookie", "setcookie", "xapikey",
})
_SECRET_SUFFIXES = ("password", "secret", "token", "apikey", "privatekey", "accesskey",
                    "passphrase")


# Cheap substring tests that must hold before a pattern can match (regex scans are slow).
_SECRET_HINTS = ("-----BEGIN", "sk-", "AKIA", "ASIA", "hp_", "ho_", "hu_", "hs_", "hr_",
                 "github_pat_", "xox", "AIza", "eyJ")
_SECRET_HINTS_LOWER = ("bearer", "authorization")
_INLINE_HINTS = ("passw", "pwd", "passphrase", "secret", "token", "apikey", "api_key",
                 "api-key", "accesskey", "access_key", "access-key", "private_key",
                 "privatekey", "private-key")
_NON_ALNUM = re.compile(r"[^a-z0-9]")


# Every name `is_secret_field` accepts contains one of these once lowercased and stripped
# of non-alphanumerics; text without any of them cannot hold a secret-named field.
_FIELD_HINTS = ("passw", "pwd", "passphrase", "secret", "token", "key", "auth", "cookie",
                "credential")
_NON_ALNUM_ANY = re.compile(r"[^0-9a-z]+")


def may_hold_secret_fields(serialized: str) -> bool:
    """False only when the JSON text of a value cannot contain a secret-named field."""
    if "\\" in serialized:
        return True  # escapes could hide a name's characters; walk to be sure
    flat = _NON_ALNUM_ANY.sub("", serialized.lower())
    return any(h in flat for h in _FIELD_HINTS)


@lru_cache(maxsize=4096)
def is_secret_field(name: str) -> bool:
    norm = _NON_ALNUM.sub("", name.lower())
    return norm in _SECRET_NAMES or norm.endswith(_SECRET_SUFFIXES)


def identity_strings(candidate: Any, extra: Iterable[str] = ()) -> list[str]:
    """Every string (and number) in the candidate record, its `a:b`/`a/b` parts, and extras."""
    out: set[str] = set()

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list | tuple):
            for x in v:
                walk(x)
        elif isinstance(v, str | int | float) and not isinstance(v, bool):
            s = str(v).strip()
            out.add(s)
            out.update(p.strip() for p in re.split(r"[:/@]", s))

    walk(candidate)
    out.update(str(x).strip() for x in extra)
    return sorted((s for s in out if len(s) >= MIN_IDENTITY_CHARS), key=len, reverse=True)


@dataclass(frozen=True)
class _Literals:
    """Case-insensitive literal strings (and optional regexes) to replace in text."""

    lowered: tuple[str, ...]
    regex: re.Pattern[str]
    has_patterns: bool

    def present(self, s: str, low: str) -> bool:
        return self.has_patterns or any(v in low for v in self.lowered)


@lru_cache(maxsize=256)
def _literals(values: tuple[str, ...], patterns: tuple[str, ...]) -> _Literals | None:
    regex = _literal_re(values, patterns)
    if regex is None:
        return None
    lowered = tuple({v.lower() for v in values} | {
        json.dumps(v, ensure_ascii=False)[1:-1].lower() for v in values})
    return _Literals(lowered, regex, bool(patterns))


def _literal_re(values: tuple[str, ...], patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    alts: list[str] = []
    for v in values:
        alts.append(re.escape(v))
        escaped = json.dumps(v, ensure_ascii=False)[1:-1]
        if escaped != v:
            alts.append(re.escape(escaped))
    alts.extend(f"(?:{p})" for p in patterns)
    if not alts:
        return None
    return re.compile("|".join(alts), re.IGNORECASE)


class Scrubber:
    """Removes identity and secrets from one item's structured values and rendered text.

    Use in two phases: `value()` on every structured value (it redacts secret-named fields
    and remembers their values), then `texts()` on every rendered piece (it scrubs those
    remembered values everywhere, known secret shapes, and the candidate's identity).
    """

    def __init__(self, redaction: Redaction | None, candidate: Any) -> None:
        r = redaction or Redaction()
        self.secrets = r.secrets
        self._identity = _literals(tuple(identity_strings(candidate, r.extra_identity)),
                                   tuple(r.identity_patterns))
        self._found: set[str] = set()

    def value(self, v: Any) -> Any:
        """`v` with secret-named fields replaced (the same object when nothing changed)."""
        if not self.secrets:
            return v
        return _redact(v, self._found)

    def texts(self, pieces: list[str]) -> list[str]:
        """Scrub rendered pieces: secrets first, then identity (until none is left)."""
        joined = "\n".join(pieces)
        low = joined.lower()
        shapes = inline = False
        values = None
        if self.secrets:
            shapes = (any(h in joined for h in _SECRET_HINTS)
                      or any(h in low for h in _SECRET_HINTS_LOWER))
            inline = any(h in low for h in _INLINE_HINTS)
            found = tuple(sorted(self._found, key=len, reverse=True))
            values = _literals(found, ()) if found else None
            if values is not None and not values.present(joined, low):
                values = None
        ident = self._identity
        if ident is not None and not ident.present(joined, low):
            ident = None
        if not (shapes or inline or values or ident):
            return pieces
        return [self._one(p, shapes, inline, values, ident) for p in pieces]

    def text(self, s: str) -> str:
        return self.texts([s])[0]

    @staticmethod
    def _one(s: str, shapes: bool, inline: bool, values: _Literals | None,
             ident: _Literals | None) -> str:
        if shapes and (any(h in s for h in _SECRET_HINTS)
                       or any(h in s.lower() for h in _SECRET_HINTS_LOWER)):
            s = SECRET_RE.sub(SECRET_MARK, s)
        if inline:
            s = INLINE_SECRET_RE.sub(lambda m: m.group(1) + SECRET_MARK, s)
        if values is not None:
            s = values.regex.sub(SECRET_MARK, s)
        if ident is not None:
            for _ in range(4):
                s, n = ident.regex.subn(IDENTITY_MARK, s)
                if not n or not ident.regex.search(s):
                    break
        return s


def _redact(v: Any, found: set[str]) -> Any:
    if isinstance(v, dict):
        out: dict[Any, Any] | None = None
        for k, x in v.items():
            if is_secret_field(str(k)) and _has_string(x):
                _collect_strings(x, found)
                y: Any = SECRET_MARK
            else:
                y = _redact(x, found)
            if y is not x and out is None:
                out = dict(v)
            if out is not None:
                out[k] = y
        return v if out is None else out
    if isinstance(v, list):
        items = [_redact(x, found) for x in v]
        return v if all(a is b for a, b in zip(items, v, strict=True)) else items
    return v


def _collect_strings(v: Any, out: set[str]) -> None:
    if isinstance(v, str):
        if len(v.strip()) >= MIN_SECRET_VALUE_CHARS:
            out.add(v.strip())
    elif isinstance(v, dict):
        for x in v.values():
            _collect_strings(x, out)
    elif isinstance(v, list | tuple):
        for x in v:
            _collect_strings(x, out)


def _has_string(v: Any) -> bool:
    if isinstance(v, str):
        return bool(v)
    if isinstance(v, dict):
        return any(_has_string(x) for x in v.values())
    if isinstance(v, list | tuple):
        return any(_has_string(x) for x in v)
    return False


FENCE_PREFIX = "<<<"
_FENCE_RUN = re.compile(r"<{3,}")


def escape_fences(s: str) -> str:
    """Make `<<<` impossible in data text, so content cannot open or close a data block."""
    if FENCE_PREFIX not in s:
        return s
    return _FENCE_RUN.sub(lambda m: "‹" * len(m.group(0)), s)
