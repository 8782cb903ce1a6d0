"""The surface `judge/prompts/render.py` uses today, on this package's engine.

`judge/prompts/redact.py` can become a re-export of this module (see the package
docstring): `Redaction` (the settings' redaction, now with `secret_patterns` and `allow`),
`Scrubber` (`value()` on structured values, `texts()` on rendered data pieces, `secrets`,
and new: `counts`), `IDENTITY_MARK`, `SECRET_MARK`, `escape_fences`, `may_hold_secret_fields`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from judge.redaction.config import RedactionConfig
from judge.redaction.engine import ItemRedactor
from judge.redaction.fields import is_secret_field as is_secret_field
from judge.redaction.fields import may_hold_secret_fields as may_hold_secret_fields
from judge.redaction.marks import IDENTITY_MARK as IDENTITY_MARK
from judge.redaction.marks import SECRET_MARK as SECRET_MARK


@dataclass(frozen=True)
class Redaction:
    """What to keep from a judge beyond the built-in rules and the trace's `candidate`.

    `identity_patterns` are case-insensitive regexes (e.g. r"acmebot-\\d+");
    `extra_identity` literal names; `secret_patterns` regexes for secrets of the user's own
    shapes; `allow` exact values the judge must see. `secrets=False` turns secret
    redaction off (tests); card numbers and SSNs are redacted regardless.
    """

    identity_patterns: Sequence[str] = field(default_factory=tuple)
    extra_identity: Sequence[str] = field(default_factory=tuple)
    secrets: bool = True
    secret_patterns: Sequence[str] = field(default_factory=tuple)
    allow: Sequence[str] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        _ = self.config  # validates every pattern now: a bad one is a one-line ConfigError

    @cached_property
    def config(self) -> RedactionConfig:
        return RedactionConfig(secret_patterns=tuple(self.secret_patterns),
                               identity_names=tuple(self.extra_identity),
                               identity_patterns=tuple(self.identity_patterns),
                               allow=tuple(self.allow), secrets=self.secrets)


_DEFAULT = Redaction()


class Scrubber:
    """Removes identity, secrets and contact details from one item.

    Two phases, as render.py calls it: `value()` on every structured value (secret-named
    fields replaced, their values remembered), then `texts()` on every rendered piece
    (everything else, JSON keys left intact). `names` (the item's tool names and ledger
    keys) are never rewritten. `counts` tells how many values of each class were replaced
    in this item.
    """

    def __init__(self, redaction: Redaction | None, candidate: Any,
                 names: Iterable[str] = ()) -> None:
        r = redaction or _DEFAULT
        self.secrets = r.secrets
        self._item = ItemRedactor(r.config, candidate, keep=names)

    def value(self, v: Any) -> Any:
        """`v` with secret-named fields replaced (the same object when nothing changed)."""
        return self._item.fields(v)

    def texts(self, pieces: list[str]) -> list[str]:
        return self._item.texts(pieces)

    def text(self, s: str) -> str:
        return self._item.text(s)

    @property
    def counts(self) -> dict[str, int]:
        return self._item.counts


FENCE_PREFIX = "<<<"
_FENCE_RUN = re.compile(r"<{3,}")


def escape_fences(s: str) -> str:
    """Make `<<<` impossible in data text, so content cannot open or close a data block."""
    if FENCE_PREFIX not in s:
        return s
    return _FENCE_RUN.sub(lambda m: "‹" * len(m.group(0)), s)
