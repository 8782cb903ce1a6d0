"""How two values are compared when a trace is diffed against its baseline.

The rules, one per kind of value (the same a reference comparison uses; say so if you change
one, because a reviewer reads drift through them):

- **numbers**: 42, 42.0 and the strings "42", "42.00", "$42.00" and "1,042.50" (a currency sign
  and thousands commas allowed) are numbers and equal when numerically equal. A digit string
  with a leading zero ("007") is an id, not a number. Booleans are never numbers.
- **ids and other strings**: compared with surrounding whitespace removed, inner runs of
  whitespace as one space, and case folded ("ORDER-17" equals " order-17").
- **lists**: order-insensitive; compared as multisets of their normalised elements.
- **objects**: key by key; a missing key differs from a key holding null.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

MISSING: Any = object()

_NUMBER = re.compile(r"[$€£]?[+-]?(?:0|[1-9]\d{0,2}(?:,\d{3})+|[1-9]\d*)(?:\.\d+)?")


def _number(v: float | int) -> float | int | str:
    if isinstance(v, float):
        if not math.isfinite(v):
            return repr(v)  # nan/inf: compared as their spelling
        if v.is_integer() and abs(v) < 2**63:
            return int(v)
    return v


def _numeric_string(s: str) -> float | int | None:
    if not s or len(s) > 64 or not _NUMBER.fullmatch(s):
        return None
    t = s.lstrip("$€£").replace(",", "")
    n = float(t) if "." in t else int(t)
    out = _number(n)
    return out if not isinstance(out, str) else None


def normalise(value: Any) -> Any:
    """The comparable form of a JSON value (see the module docstring)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return _number(value)
    if isinstance(value, str):
        s = " ".join(value.split()).casefold()
        n = _numeric_string(s)
        return s if n is None else n
    if isinstance(value, list | tuple):
        return sorted((normalise(x) for x in value), key=canonical)
    if isinstance(value, dict):
        return {str(k): normalise(x) for k, x in value.items()}
    return str(value)


def canonical(value: Any) -> str:
    """A normalised value as one string (sort key and equality key)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=True, default=str)


def same(a: Any, b: Any) -> bool:
    """Are two raw values equal under the rules above?"""
    if a is MISSING or b is MISSING:
        return a is b
    return canonical(normalise(a)) == canonical(normalise(b))


@dataclass(frozen=True)
class ValueDiff:
    """One difference: the dotted path (empty for the whole value) and the raw values
    (`MISSING` where one side has no such path)."""

    path: str
    baseline: Any
    actual: Any


def _join(path: str, part: str) -> str:
    return f"{path}.{part}" if path else part


def diff_values(baseline: Any, actual: Any, path: str = "") -> list[ValueDiff]:
    """Where two values differ under the rules above: objects key by key (sorted), anything
    else (lists included, as whole multisets) as one difference at its path."""
    if same(baseline, actual):
        return []
    if isinstance(baseline, dict) and isinstance(actual, dict):
        out: list[ValueDiff] = []
        for k in sorted(set(baseline) | set(actual), key=str):
            out.extend(diff_values(baseline.get(k, MISSING), actual.get(k, MISSING),
                                   _join(path, str(k))))
        return out
    return [ValueDiff(path, baseline, actual)]
