"""What a scenario or the settings may add to redaction, checked once, up front.

`RedactionConfig` carries extra secret patterns, extra identity names and patterns, and an
allow-list of values the judge must see even when they look like a secret, a card or a
name (an order id shaped like a key, say). Patterns are Python regular expressions,
matched case-insensitively; an invalid one is a `ConfigError` of one line naming it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from judge.errors import ConfigError


def compile_patterns(kind: str, patterns: Iterable[str]) -> re.Pattern[str] | None:
    """One case-insensitive regex of `patterns`, or None; `kind` names them in errors."""
    alts: list[str] = []
    for p in patterns:
        if not isinstance(p, str) or not p:
            raise ConfigError(f"{kind} pattern {p!r} must be a non-empty string")
        try:
            compiled = re.compile(p, re.IGNORECASE)
        except re.error as exc:
            raise ConfigError(f"{kind} pattern {p!r} is not a valid regular expression "
                              f"({exc})") from None
        if compiled.match(""):
            raise ConfigError(f"{kind} pattern {p!r} matches the empty string")
        alts.append(f"(?:{p})")
    if not alts:
        return None
    return re.compile("|".join(alts), re.IGNORECASE)


@dataclass(frozen=True)
class RedactionConfig:
    """Additions to the built-in rules; the defaults redact everything built in.

    `secret_patterns`: regexes whose whole match is a secret. `identity_names`: literal
    names of the system under test; `identity_patterns`: regexes for them. `allow`: exact
    values never redacted. `secrets=False` turns off secret redaction (cards and SSNs stay
    on: they are always redacted) — for tests of the rest.
    """

    secret_patterns: Sequence[str] = field(default_factory=tuple)
    identity_names: Sequence[str] = field(default_factory=tuple)
    identity_patterns: Sequence[str] = field(default_factory=tuple)
    allow: Sequence[str] = field(default_factory=tuple)
    secrets: bool = True
    pii: bool = True

    def __post_init__(self) -> None:
        for name in ("secret_patterns", "identity_names", "identity_patterns", "allow"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise ConfigError(f"redaction {name}: expected a list of strings, got a string")
            object.__setattr__(self, name, tuple(value))
        for v in (*self.identity_names, *self.allow):
            if not isinstance(v, str):
                raise ConfigError(f"redaction value {v!r} must be a string")
        # compile now, so a bad pattern fails before any work (cached on the instance)
        _ = self.secret_re, self.identity_re

    @cached_property
    def secret_re(self) -> re.Pattern[str] | None:
        return compile_patterns("secret", self.secret_patterns)

    @cached_property
    def identity_re(self) -> re.Pattern[str] | None:
        return compile_patterns("identity", self.identity_patterns)

    @cached_property
    def allowed(self) -> tuple[str, ...]:
        return tuple(sorted({v for v in self.allow if v}, key=len, reverse=True))
