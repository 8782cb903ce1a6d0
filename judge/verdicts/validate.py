"""Validate a judge's completion against the item it judged; invalid → VerdictInvalid.

The checks: one JSON object (a ```json fence tolerated; a field named twice is ambiguous and
invalid), only the schema's fields, a label of the prompt, and a complete, unambiguous
verdict: a fail names the violated key (a key of the item's ledger snapshot) **and** the
evidence (a seq of the slice shown); a pass names neither; `confidence` a number in [0, 1].
An incomplete or ambiguous verdict is never scored: the engine re-asks once with the reason,
then records it `unscored` (formats §3).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Protocol

from judge.formats.verdicts import Verdict
from judge.items.model import Item

_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)
FIELDS = ("label", "violated_key", "evidence_event", "confidence", "rationale")
MAX_RATIONALE = 2000


class Prompt(Protocol):
    """What validation needs of the prompt a verdict answers (a `judge.prompts.Prompt`;
    prompts import the schema from this package, so this package names no prompt type)."""

    @property
    def labels(self) -> tuple[str, ...]: ...

    @property
    def version(self) -> str: ...

    @property
    def hash(self) -> str: ...


class VerdictInvalid(Exception):
    """A completion that is not a valid verdict for its item; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Duplicate(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object hook that refuses a field named twice (which value would count?)."""
    out: dict[str, Any] = {}
    for name, value in pairs:
        if name in out:
            raise _Duplicate(name)
        out[name] = value
    return out


def _decode(body: str) -> Any:
    # strict=False: a raw line break or tab inside a string (the rationale) is read as that
    # character, as a JSON escape of it would be; small models under a grammar write them
    try:
        return json.loads(body, object_pairs_hook=_no_duplicates, strict=False)
    except _Duplicate as dup:
        raise VerdictInvalid(f"field '{dup.name}' appears more than once (an ambiguous "
                             "verdict: give each field once)") from None


def _load(text: str) -> dict[str, Any]:
    body = text.strip()
    m = _FENCE.match(body)
    if m:
        body = m.group(1).strip()
    if not body:
        raise VerdictInvalid("empty completion (expected a JSON object)")
    try:
        data = _decode(body)
    except json.JSONDecodeError as exc:
        start, end = body.find("{"), body.rfind("}")
        try:
            if start < 0 or end <= start:
                raise ValueError
            data = _decode(body[start:end + 1])
        except (ValueError, RecursionError):
            raise VerdictInvalid(f"not valid JSON ({exc.msg} at line {exc.lineno} "
                                 f"column {exc.colno})") from None
    except RecursionError:
        raise VerdictInvalid("not valid JSON (nested too deeply)") from None
    if not isinstance(data, dict):
        raise VerdictInvalid(f"expected a JSON object, got {type(data).__name__}")
    return data


def _short(values: list[Any], n: int = 12) -> str:
    shown = ", ".join(str(v) for v in values[:n])
    return shown + (", …" if len(values) > n else "")


def check(data: dict[str, Any], item: Item, prompt: Prompt) -> dict[str, Any]:
    """The checked fields of a parsed verdict object (raises VerdictInvalid)."""
    extra = sorted(set(data) - set(FIELDS))
    if extra:
        raise VerdictInvalid(f"unknown field '{extra[0]}' (allowed: {', '.join(FIELDS)})")
    label = data.get("label")
    if label not in prompt.labels:
        raise VerdictInvalid(f"label must be one of {', '.join(prompt.labels)} (got {label!r})")
    key = data.get("violated_key")
    if key in ("", "null", "none", "None"):
        key = None
    if key is not None and not isinstance(key, str):
        raise VerdictInvalid(f"violated_key must be a string or null (got {key!r})")
    if label == "pass" and key is not None:
        raise VerdictInvalid(f"a pass names no violated key (got violated_key {key!r}): "
                             "give null for a pass, or label fail")
    if label == "fail" and key is None:
        raise VerdictInvalid("violated_key is required when label is fail: name the ledger "
                             f"key the item violates (one of: {_short(sorted(item.ledger_keys))})")
    if key is not None and key not in item.ledger_keys:
        raise VerdictInvalid(f"violated_key '{key}' is not a key of the ledger shown "
                             f"(keys: {_short(sorted(item.ledger_keys)) or 'none'})")
    ev = data.get("evidence_event")
    if isinstance(ev, float) and ev.is_integer():
        ev = int(ev)
    if isinstance(ev, str) and ev.strip().isdigit():
        ev = int(ev.strip())
    if isinstance(ev, str) and ev.strip().lower() in ("", "null", "none"):
        ev = None
    if ev is not None and (isinstance(ev, bool) or not isinstance(ev, int)):
        raise VerdictInvalid(f"evidence_event must be an integer seq or null (got {ev!r})")
    if ev is not None and ev not in item.slice_seqs:
        raise VerdictInvalid(f"evidence_event {ev} is not the seq of an event shown "
                             f"(shown: {_short(sorted(item.slice_seqs))})")
    if label == "pass" and ev is not None:
        raise VerdictInvalid(f"a pass cites no evidence event (got evidence_event {ev}): "
                             "give null for a pass, or label fail")
    if label == "fail" and ev is None:
        raise VerdictInvalid("evidence_event is required when label is fail: give the seq of "
                             f"the shown event that shows the violation (one of: "
                             f"{_short(sorted(item.slice_seqs))})")
    conf = data.get("confidence")
    if isinstance(conf, bool) or not isinstance(conf, int | float) or math.isnan(conf):
        raise VerdictInvalid(f"confidence must be a number in [0, 1] (got {conf!r})")
    if not 0.0 <= float(conf) <= 1.0:
        raise VerdictInvalid(f"confidence must be in [0, 1] (got {conf})")
    rationale = data.get("rationale")
    if rationale is not None and not isinstance(rationale, str):
        raise VerdictInvalid("rationale must be a string")
    return {"label": label, "violated_key": key, "evidence_event": ev,
            "confidence": float(conf), "rationale": (rationale or "")[:MAX_RATIONALE] or None}


def parse_verdict(text: str, item: Item, prompt: Prompt, model: str) -> Verdict:
    """The Verdict a completion states about `item`, or VerdictInvalid with the reason."""
    fields = check(_load(text), item, prompt)
    return Verdict(item_id=item.item_id, rubric=item.rubric, prompt_version=prompt.version,
                   prompt_hash=prompt.hash, model=model, reason=None, **fields)


def unscored(item: Item, prompt: Prompt | None, model: str, reason: str,
             raw: str | None) -> Verdict:
    """An `unscored` verdict: the judge gave no valid verdict; never a pass or a fail."""
    return Verdict(item_id=item.item_id, label="unscored", rubric=item.rubric,
                   prompt_version=prompt.version if prompt else None,
                   prompt_hash=prompt.hash if prompt else None, model=model,
                   reason=reason or "no valid verdict", raw_completion=raw)
