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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

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
    r"\b(?i:bearer|basic)\s+(?=[A-Za-z0-9\-._~+/]*\d|[A-Za-z0-9\-._~+/]{20})"
    r"[A-Za-z0-9\-._~+/]{8,}=*",
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


def is_secret_field(name: str) -> bool:
    norm = re.sub(r"[^a-z0-9]", "", name.lower())
    return norm in _SECRET_NAMES or norm.endswith(_SECRET_SUFFIXES)


@dataclass(frozen=True)
class Redaction:
    """What to keep from a judge beyond the trace's own `candidate` fields.

    `identity_patterns` are case-insensitive regexes (e.g. r"gpt-4o\\S*", "support-bot");
    `extra_identity` are literal names. `secrets=False` turns secret redaction off (tests).
    """

    identity_patterns: Sequence[str] = field(default_factory=tuple)
    extra_identity: Sequence[str] = field(default_factory=tuple)
    secrets: bool = True


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


@lru_cache(maxsize=256)
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
    """Removes identity and secrets from one item's structured values and rendered text."""

    def __init__(self, redaction: Redaction | None, candidate: Any,
                 data: Iterable[Any] = ()) -> None:
        r = redaction or Redaction()
        self.secrets = r.secrets
        self._identity = _literal_re(tuple(identity_strings(candidate, r.extra_identity)),
                                     tuple(r.identity_patterns))
        found: set[str] = set()
        if self.secrets:
            for value in data:
                _collect_secret_values(value, found)
        keep = tuple(sorted(found, key=len, reverse=True))
        self._secret_values = _literal_re(keep, ()) if keep else None

    def value(self, v: Any) -> Any:
        """A copy of a structured value with secret-named fields replaced."""
        if not self.secrets:
            return v
        return _redact_fields(v)

    def text(self, s: str) -> str:
        """Scrub rendered text: secrets first, then identity (repeated until none is left)."""
        if self.secrets:
            s = SECRET_RE.sub(SECRET_MARK, s)
            s = INLINE_SECRET_RE.sub(lambda m: m.group(1) + SECRET_MARK, s)
            if self._secret_values is not None:
                s = self._secret_values.sub(SECRET_MARK, s)
        if self._identity is not None:
            for _ in range(4):
                s, n = self._identity.subn(IDENTITY_MARK, s)
                if not n or not self._identity.search(s):
                    break
        return s


def _collect_secret_values(v: Any, out: set[str]) -> None:
    if isinstance(v, dict):
        for k, x in v.items():
            if is_secret_field(str(k)):
                _collect_strings(x, out)
            else:
                _collect_secret_values(x, out)
    elif isinstance(v, list | tuple):
        for x in v:
            _collect_secret_values(x, out)


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


def _redact_fields(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: (SECRET_MARK if is_secret_field(str(k)) and _has_string(x)
                    else _redact_fields(x)) for k, x in v.items()}
    if isinstance(v, list):
        return [_redact_fields(x) for x in v]
    return v


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
    return _FENCE_RUN.sub(lambda m: "‹" * len(m.group(0)), s)
