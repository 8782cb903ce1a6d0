"""The minimal slice of a trace a judge needs for one target event, within a token budget.

The slice holds the events since the last user turn before the target (that user message
included), plus earlier tool results (and user messages) that the target depends on: those
containing a value that appears in the target's arguments (a memory write's value, a
reply's ids and numbers), e.g. the lookup that returned the reservation id being cancelled;
and the latest earlier call of the same tool (write of the same memory key) with its result.
Long fields are cut with a visible `…[truncated N chars]` marker. Tokens are estimated as
characters / 4. Never the whole transcript.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from judge.checks.replies import claims_in
from judge.trace.model import Event, EventKind

CHARS_PER_TOKEN = 4
MIN_NEEDLE_CHARS = 3
#: How many events before the target's turn are searched for dependencies (keeps extraction
#: linear on very long traces).
MAX_LOOKBACK = 2000
_AMOUNT_DIGITS = re.compile(r"\d[\d,]*(?:\.\d+)?")
_TEXT_FIELDS = {"user": "text", "assistant": "text", "summary": "text", "tool_result": "result",
                "tool_call": "args", "state_write": "value"}


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def estimate_tokens(value: Any) -> int:
    """Tokens ≈ characters / 4 of the compact JSON (strings count as their own text)."""
    text = value if isinstance(value, str) else dumps(value)
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def event_dict(ev: Event) -> dict[str, Any]:
    """The judge-visible fields of an event (never its free-form metadata)."""
    d = ev.model_dump(mode="json", exclude_none=True, exclude={"metadata"})
    if ev.kind is EventKind.TOOL_RESULT and "result" not in d and ev.error is None:
        d["result"] = None
    return d


def truncate_text(text: str, limit: int, keep: Sequence[str] = ()) -> str:
    """`text` cut to about `limit` chars with a visible marker; keeps an excerpt around the
    first `keep` value that the cut would lose (e.g. the id the target acts on)."""
    if len(text) <= limit:
        return text
    for needle in keep:
        pos = text.find(needle)
        if pos < 0 or pos + len(needle) <= limit:
            continue
        span = limit // 4
        lo = max(0, pos - span)
        hi = min(len(text), pos + len(needle) + span)
        head_len = max(16, limit - (hi - lo))
        tail = f"…[truncated {len(text) - hi} chars]" if hi < len(text) else ""
        if lo <= head_len:
            return f"{text[:hi]}{tail}"
        return f"{text[:head_len]}…[truncated {lo - head_len} chars]…{text[lo:hi]}{tail}"
    return f"{text[:limit]}…[truncated {len(text) - limit} chars]"


def truncate_event(d: dict[str, Any], limit: int, keep: Sequence[str] = ()) -> dict[str, Any]:
    """A copy of the event dict whose long text/result/args field is cut to `limit` chars."""
    field = _TEXT_FIELDS.get(str(d.get("kind")))
    if field is None or field not in d:
        return d
    value = d[field]
    text = value if isinstance(value, str) else dumps(value)
    if len(text) <= limit:
        return d
    return {**d, field: truncate_text(text, limit, keep)}


def needles_of(value: Any) -> list[str]:
    """Scalar values in a target's args that could tie it to an earlier result."""
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list | tuple):
            for x in v:
                walk(x)
        elif isinstance(v, bool) or v is None:
            return
        elif isinstance(v, int | float | str):
            s = str(v).strip()
            if len(s) >= MIN_NEEDLE_CHARS and s not in out:
                out.append(s)

    walk(value)
    return out


def _is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def contains_value(text: str, needle: str) -> bool:
    """`needle` occurs in `text` not glued to a word character on either side."""
    pos = text.find(needle)
    n = len(needle)
    while pos >= 0:
        before = text[pos - 1] if pos else " "
        after = text[pos + n] if pos + n < len(text) else " "
        if not _is_word_char(before) and not _is_word_char(after):
            return True
        pos = text.find(needle, pos + 1)
    return False


def _text_of(d: dict[str, Any]) -> str:
    field = _TEXT_FIELDS.get(str(d.get("kind")))
    if field is None or field not in d:
        return ""
    v = d[field]
    return v if isinstance(v, str) else dumps(v)


class SliceSource:
    """One trace's event dicts with cached texts and sizes, shared by all its items."""

    def __init__(self, events: Sequence[Event]) -> None:
        self.dicts = [event_dict(e) for e in events]
        self._texts: dict[int, str] = {}
        self._sizes: dict[int, int] = {}

    def text(self, i: int) -> str:
        t = self._texts.get(i)
        if t is None:
            t = self._texts[i] = _text_of(self.dicts[i])
        return t

    def size(self, i: int, d: dict[str, Any]) -> int:
        if d is not self.dicts[i]:
            return len(dumps(d))
        n = self._sizes.get(i)
        if n is None:
            n = self._sizes[i] = len(dumps(d))
        return n


def build_slice(
    events: Sequence[Event], index: int, token_budget: int = 2000,
    source: SliceSource | None = None,
) -> tuple[dict[str, Any], ...]:
    """The slice for `events[index]`, as event dicts in seq order (the target included).

    `source` may pass a `SliceSource` of the same events (a speed-up when many items come
    from one trace).
    """
    src = source if source is not None else SliceSource(events)
    ds = src.dicts
    target = ds[index]
    start = index
    while start > 0 and ds[start].get("kind") != "user":
        start -= 1
    budget_chars = max(token_budget, 50) * CHARS_PER_TOKEN
    field_limit = max(400, budget_chars // 4)

    needles = target_needles(target)
    chosen: dict[int, dict[str, Any]] = {}
    used = 0

    def add(i: int, d: dict[str, Any], force: bool = False) -> bool:
        nonlocal used
        cost = src.size(i, d)
        if not force and used + cost > budget_chars:
            return False
        chosen[i] = d
        used += cost
        return True

    # 1. The target itself, cut only if it alone would eat most of the budget.
    add(index, truncate_event(target, max(field_limit, budget_chars * 3 // 4)), force=True)
    # 2. The user message that opened this turn.
    if start != index and ds[start].get("kind") == "user":
        add(start, truncate_event(ds[start], field_limit), force=True)
    # 3. Earlier results (then user messages) holding a value the target uses.
    if needles:
        deps: list[tuple[int, list[str]]] = []
        user_deps: list[tuple[int, list[str]]] = []
        remaining = list(needles)
        for i in range(start - 1, max(-1, start - 1 - MAX_LOOKBACK), -1):
            if not remaining:
                break
            kind = ds[i].get("kind")
            if kind not in ("tool_result", "user"):
                continue
            text = src.text(i)
            found = [n for n in remaining if contains_value(text, n)]
            if found:
                (deps if kind == "tool_result" else user_deps).append((i, found))
                remaining = [n for n in remaining if n not in found]
        for i, keep in deps + user_deps:
            add(i, truncate_event(ds[i], field_limit, keep))
    # 4. The latest earlier call of the same tool and its result (repeats, retries); the
    #    latest earlier write of the same memory key.
    if target.get("kind") == "state_write":
        for i in range(start - 1, max(-1, start - 1 - MAX_LOOKBACK), -1):
            d = ds[i]
            if d.get("kind") == "state_write" and d.get("key") == target.get("key"):
                if i not in chosen:
                    add(i, truncate_event(d, field_limit))
                break
    if target.get("kind") == "tool_call":
        for i in range(start - 1, max(-1, start - 1 - MAX_LOOKBACK), -1):
            d = ds[i]
            if d.get("kind") == "tool_call" and d.get("tool") == target.get("tool"):
                if i not in chosen:
                    add(i, truncate_event(d, field_limit))
                j = _result_of(ds, i)
                if j is not None and j not in chosen:
                    add(j, truncate_event(ds[j], field_limit // 2))
                break
    # 5. The rest of the turn, nearest to the target first.
    for i in range(index - 1, start, -1):
        keep = needles if ds[i].get("kind") == "tool_result" else []
        if not add(i, truncate_event(ds[i], field_limit, keep)):
            small = truncate_event(ds[i], 200, keep)
            add(i, small)
    return tuple(chosen[i] for i in sorted(chosen))


def target_needles(target: dict[str, Any]) -> list[str]:
    """The values tying a target to earlier events: a call's argument values, a memory
    write's stored values, a reply's ids, dates and numbers."""
    kind = target.get("kind")
    if kind == "tool_call":
        return needles_of(target.get("args"))
    if kind == "state_write":
        return needles_of(target.get("value"))
    if kind == "assistant":
        out: list[str] = []
        for c in claims_in(str(target.get("text", ""))):
            text = c.text
            if c.kind == "amount":
                m = _AMOUNT_DIGITS.search(text)
                text = m.group(0) if m else text
            if len(text) >= MIN_NEEDLE_CHARS and text not in out:
                out.append(text)
        return out
    return []


def _result_of(ds: Sequence[dict[str, Any]], i: int) -> int | None:
    """The index of the result answering the call at `i` (by call_id, else the next result)."""
    call_id = ds[i].get("call_id")
    for j in range(i + 1, min(len(ds), i + 50)):
        d = ds[j]
        if d.get("kind") != "tool_result":
            continue
        if call_id is None or d.get("call_id") == call_id:
            return j
    return None
