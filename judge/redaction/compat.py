"""The surface `judge/prompts/render.py` uses, on this package's engine (re-exported by
`judge/prompts/redact.py`): `Redaction` (judge.request: the settings' rules plus a scenario's
additions), `Scrubber` (`value()` on structured values, `texts()` on rendered data pieces,
`secrets`, `counts`), `IDENTITY_MARK`, `SECRET_MARK`, `escape_fences`,
`may_hold_secret_fields`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from judge.redaction.config import RedactionConfig
from judge.redaction.engine import ItemRedactor
from judge.redaction.fields import is_secret_field as is_secret_field
from judge.redaction.fields import may_hold_secret_fields as may_hold_secret_fields
from judge.redaction.marks import IDENTITY_MARK as IDENTITY_MARK
from judge.redaction.marks import SECRET_MARK as SECRET_MARK
from judge.request import Redaction as Redaction


@lru_cache(maxsize=64)
def _config(redaction: Redaction) -> RedactionConfig:
    """The engine's configuration of a (frozen, hashable) Redaction, built once."""
    return RedactionConfig(secret_patterns=tuple(redaction.secret_patterns),
                           identity_names=tuple(redaction.extra_identity),
                           identity_patterns=tuple(redaction.identity_patterns),
                           allow=tuple(redaction.allow), secrets=redaction.secrets)


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
        self._item = ItemRedactor(_config(r), candidate, keep=names)

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
