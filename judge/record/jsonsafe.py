"""Exact, JSON-safe copies of what a tool was given and what it returned.

A recorded value must survive `json.dumps` → `judge check` → `json.loads` unchanged, and
must not change when the agent later mutates the object it got back. `copy_json(value)`
returns a deep copy made only of JSON's types (dict with str keys, list, str, int, float,
bool, None) and the paths of everything it could not copy exactly:

- exact: JSON's own types; tuples (as lists); pydantic models (`model_dump(mode="json")`),
  dataclasses (their fields), enums (their value), `datetime`/`date`/`time` (ISO 8601 text),
  `UUID` (text), `Decimal` that is an integer (an int); nested to any mix of these;
- inexact, recorded as text and listed in `lossy`: a non-str dict key (`str(key)`), a
  non-integral `Decimal`, a float that is not finite (`"nan"`, `"inf"`), bytes (decoded as
  UTF-8 with escapes), a set (sorted by text), a string that is not valid Unicode (lone
  surrogates escaped), a reference cycle (`"<cycle>"`), nesting deeper than the trace
  format's limit (`"<too deep>"`), anything else (`repr`, cut at 2,000 characters).

Nothing here raises on a strange value: the tool already ran, its effect happened, and the
recorder's job is to write down what it can, and say what it could not.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import math
import uuid
from collections.abc import Mapping, Sequence, Set
from decimal import Decimal
from typing import Any

from judge.trace.document import MAX_DEPTH

#: how long a `repr` of an unknown object may be in a trace
MAX_REPR = 2000
#: levels of nesting a recorded value may have: a trace's events sit three levels down (the
#: trace, its `events` list, the event), and the whole document may nest `MAX_DEPTH`
ROOM = MAX_DEPTH - 3


@dataclasses.dataclass
class Copied:
    """A JSON-safe copy and the paths (`result.items[2].price`) it could not copy exactly."""

    value: Any
    lossy: list[str]


def copy_json(value: Any, root: str = "") -> Copied:
    """The exact JSON-safe copy of `value` (see the module doc); `root` prefixes paths."""
    try:
        return Copied(_fast(value, ROOM), [])
    except _NotPlain:
        pass
    lossy: list[str] = []
    out = _copy(value, root, lossy, set(), ROOM)
    return Copied(out, lossy)


class _NotPlain(Exception):
    """The value is not plain JSON data: the careful copy takes over."""


def _fast(value: Any, room: int) -> Any:
    """The copy of a value made of JSON's own types only (what tools mostly return), without
    the path bookkeeping; raises _NotPlain at anything else (a cycle ends at the depth)."""
    t = type(value)
    if t is str:
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise _NotPlain from None
        return value
    if value is None or t is int or t is bool:
        return value
    if t is float:
        if value - value == 0.0:  # finite (NaN and ±inf give NaN)
            return value
        raise _NotPlain
    if room <= 0:
        raise _NotPlain
    if t is dict:
        out: dict[str, Any] = {}
        for k, v in value.items():
            if type(k) is not str or not (k.isascii() or _encodable(k)):
                raise _NotPlain
            out[k] = _fast(v, room - 1)
        return out
    if t is list:
        return [_fast(v, room - 1) for v in value]
    raise _NotPlain


def _encodable(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _text(s: str, path: str, lossy: list[str]) -> str:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        lossy.append(path or "(value)")
        return s.encode("utf-8", "backslashreplace").decode("utf-8")
    return s


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _copy(value: Any, path: str, lossy: list[str], active: set[int], room: int) -> Any:
    t = type(value)
    if value is None or t is bool or t is int:
        return value
    if t is str:
        return _text(value, path, lossy)
    if t is float:
        if math.isfinite(value):
            return value
        lossy.append(path or "(value)")
        return str(value)
    if isinstance(value, enum.Enum):
        return _copy(value.value, path, lossy, active, room)
    if isinstance(value, bool | int):  # subclasses (IntEnum handled above)
        return int(value)
    if isinstance(value, float):
        return _copy(float(value), path, lossy, active, room)
    if isinstance(value, str):
        return _text(str(value), path, lossy)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Decimal):
        if value.is_finite() and value == value.to_integral_value():
            return int(value)
        lossy.append(path or "(value)")
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        lossy.append(path or "(value)")
        return bytes(value).decode("utf-8", "backslashreplace")
    if id(value) in active:
        lossy.append(path or "(value)")
        return "<cycle>"
    if room <= 0:
        lossy.append(path or "(value)")
        return "<too deep>"
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):  # a pydantic model
        try:
            data = dump(mode="json")
        except Exception:
            data = None
        if data is not None:
            return _copy(data, path, lossy, active, room)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return _copy(fields, path, lossy, active, room)
    active.add(id(value))
    try:
        if isinstance(value, Mapping):
            out: dict[str, Any] = {}
            for k, v in value.items():
                if type(k) is str:
                    key = _text(k, _join(path, "(a key)"), lossy)
                else:
                    key = str(k.value if isinstance(k, enum.Enum) else k)
                    if not isinstance(k, str | enum.Enum):
                        lossy.append(_join(path, key))
                out[key] = _copy(v, _join(path, key), lossy, active, room - 1)
            return out
        if isinstance(value, Sequence):
            return [_copy(v, _join(path, i), lossy, active, room - 1)
                    for i, v in enumerate(value)]
        if isinstance(value, Set):
            lossy.append(path or "(value)")
            items = [_copy(v, _join(path, i), lossy, active, room - 1)
                     for i, v in enumerate(value)]
            return sorted(items, key=repr)
    finally:
        active.discard(id(value))
    lossy.append(path or "(value)")
    text = repr(value)
    return _text(text if len(text) <= MAX_REPR else text[: MAX_REPR - 1] + "…", path, [])
