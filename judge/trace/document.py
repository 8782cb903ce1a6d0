"""What every JSON document judge reads must be, on both of the trace loader's paths.

The fast path (pydantic-core's JSON parser) refuses two kinds of JSON that Python's `json`
accepts; the careful path (`json.loads`) refuses them too, so a document means the same on
both, and neither gets through to crash a later stage:

**Nesting** (formats.md, extensions). A document — a `.json` trace, one line of a `.jsonl`
file, a scenario or suite file — may nest non-empty lists and objects at most `MAX_DEPTH`
levels deep, its root included: `{"a": 1}` is one level, `{"a": [1]}` two, `{"a": []}` one.
That is exactly what the
loader's fast parser (pydantic-core's) accepts, so the careful path (`json.loads`, which
goes as deep as Python's recursion allows) refuses the same documents, with a message
naming the file, the line and the field. Deeper input used to get through the careful path
and crash a later stage (pydantic's JSON writer stops at 255 levels: `judge grade` died after
the provider call, leaving its run "running").

**Unicode.** A `\\ud800`-style escape that is not half of a surrogate pair is valid JSON
syntax but no character: it cannot be written as UTF-8, so output, storage or a provider
request failed on it. It is refused, naming the field.
"""

from __future__ import annotations

from typing import Any

from judge.errors import InputError

MAX_DEPTH = 200


def _exceeds(value: dict[Any, Any] | list[Any], room: int) -> bool:
    """Whether the non-empty container `value` nests more than `room` levels (itself one)."""
    if room <= 0:
        return True
    for item in (value.values() if type(value) is dict else value):
        t = type(item)
        if (t is dict or t is list) and item and _exceeds(item, room - 1):
            return True
    return False


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` (plain JSON data: dicts, lists, scalars) nests more than `limit`
    levels of non-empty lists and objects."""
    t = type(value)
    return (t is dict or t is list) and bool(value) and _exceeds(value, limit)


def deep_path(value: Any, limit: int = MAX_DEPTH) -> str:
    """Where `value` nests too deeply: the path to the field that does (`metadata`,
    `events[3].args`: keys down to the first one that does not hold a list), '' for the
    root."""
    path = ""
    room = limit
    for _ in range(4):
        room -= 1
        items = value.items() if type(value) is dict else enumerate(value)
        found = next(((k, v) for k, v in items if too_deep(v, room)), None)
        if found is None:
            break
        key, item = found
        path += f"[{key}]" if isinstance(key, int) else ("." if path else "") + str(key)
        value = item
        if isinstance(key, str) and type(item) is not list:
            break
    return path


def check_document(value: Any, file: str, line: int | None, text: str | None = None) -> None:
    """Raise the InputError for a document that nests too deeply or holds a lone surrogate,
    naming where. `text`: the JSON it was read from (lone surrogates are only looked for
    when it holds a `\\ud…` escape)."""
    if too_deep(value):
        raise InputError(f"nested deeper than {MAX_DEPTH} levels (the limit for any input "
                         "document; see docs/formats.md)", file=file, line=line,
                         path=deep_path(value) or None)
    if text is None or "\\ud" in text or "\\uD" in text:
        where = unencodable_path(value)
        if where is not None:
            raise InputError("not Unicode text (a \\ud800-\\udfff escape that is not half of "
                             "a surrogate pair)", file=file, line=line, path=where or None)


def _unencodable(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def unencodable_path(value: Any, path: str = "") -> str | None:
    """The path of the first string (key or value) in `value` that is not valid Unicode (a
    lone surrogate), or None."""
    if isinstance(value, str):
        return path if _unencodable(value) else None
    if isinstance(value, dict):
        for k, v in value.items():
            sub = f"{path}.{k}" if path else str(k)
            if isinstance(k, str) and _unencodable(k):
                return path or "(a key)"
            found = unencodable_path(v, sub)
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found = unencodable_path(v, f"{path}[{i}]")
            if found is not None:
                return found
    return None
